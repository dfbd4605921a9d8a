// Internal to replay/: the index syntax of a --set/--unset body path's segments
// ("messages.0.content"), which --shard's I/N numbers share.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace retrace::replay {

// A decimal index of at most 9 digits, nothing else; nullopt otherwise.
std::optional<std::size_t> parse_index(std::string_view segment);

}  // namespace retrace::replay
