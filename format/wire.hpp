// Internal to format/: plain structs (trace.hpp) <-> Cap'n Proto structs (trace.capnp), and the
// framing constants the writer and reader share. Nothing outside format/ includes this header.
//
//   zstd frame:         u32le 0xFD2FB528 ...                      (kZstdMagic)
//   skippable frame:    u32le 0x184D2A5? (any low nibble), u32le size, size bytes
//   the index frame:    the skippable frame with magic 0x184D2A5E  (kIndexMagic)
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "format/trace.hpp"
#include "trace.capnp.h"

namespace retrace::detail {

constexpr std::uint32_t kZstdMagic = 0xFD2FB528;
constexpr std::uint32_t kIndexMagic = 0x184D2A5E;
constexpr std::uint32_t kSkippableMask = 0xFFFFFFF0;
constexpr std::uint32_t kSkippableBase = 0x184D2A50;

void fill_header(wire::Header::Builder out, const TraceHeader& header);
void read_header(wire::Header::Reader in, TraceHeader& header);
void fill_exchange(wire::Exchange::Builder out, const Exchange& exchange);
// Reuses `exchange`'s strings and vectors: a reader loop allocates only while records grow.
void read_exchange(wire::Exchange::Reader in, Exchange& exchange);

inline std::string errno_text(int error) { return std::strerror(error); }

inline std::uint32_t load_le32(const void* bytes) {
  std::uint32_t value;
  std::memcpy(&value, bytes, 4);
  return value;  // the formats are little-endian, as is every host we build for
}

}  // namespace retrace::detail
