// Segment sets: a directory of numbered traces that `record --out DIR/` writes, read as one trace.
//
//   DIR/000001.rtrace, DIR/000002.rtrace, ...   each a complete .rtrace (header, exchange frames,
//                                               index), closed at an exchange boundary
//
// A segment's name is its number, six digits or more, then ".rtrace"; the numbers of a set rise by
// one, so a number missing between two present ones is a gap (a segment deleted or lost), while
// numbers missing before the first present one are what retention deleted. Each segment's header
// carries two labels: `segment` (its number) and `segment_set` (an id shared by every segment of
// the set, kept when record continues a set it finds). Exchange ids continue across segments.
//
// Reading: TraceReader, given a directory, reads its segments in number order as one trace
// (trace.hpp), one segment open at a time; a gap or a torn segment is named in its Recovery and
// the rest is read. No command learns about segments.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace retrace {

inline constexpr std::string_view kSegmentLabel = "segment";
inline constexpr std::string_view kSegmentSetLabel = "segment_set";
// The most entries list_segments() reads from a directory: a bound on outside input.
inline constexpr std::uint64_t kMaxSegmentDirectoryEntries = 10'000'000;

// "000042.rtrace".
std::string segment_file_name(std::uint64_t number);
// The number a segment's file name holds; nullopt when it is not a segment's name.
std::optional<std::uint64_t> segment_number(std::string_view file_name);

struct SegmentListing {
  std::vector<std::uint64_t> numbers;  // ascending (8 bytes a segment: all a listing holds)
  std::uint64_t other_entries = 0;     // files and directories that are not segments
  std::string first_other;             // the first of them met, for a message
};
// The segments in `directory`. Throws TraceError when it cannot be read or holds more than
// kMaxSegmentDirectoryEntries entries.
SegmentListing list_segments(const std::filesystem::path& directory);

// True when `path` is a directory holding at least one segment: a segment set.
bool is_segment_set(const std::filesystem::path& path);

}  // namespace retrace
