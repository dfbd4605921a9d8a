// See net/arrived_blocks.hpp.
#include "net/arrived_blocks.hpp"

#include <zstd.h>

#include <algorithm>
#include <memory>
#include <stdexcept>

namespace retrace::net {

namespace {

// zstd's fastest levels: a streamed event compresses to 10-30 bytes at level 1 as at the
// negative ones, and the compression costs ~0.1 µs a token (bench/RESULTS.md, "in flight").
constexpr int kLevel = 1;

struct CCtxFree {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
struct DCtxFree {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

// One compressor and one decompressor a thread, made on first use, for every body it handles.
ZSTD_CCtx* thread_cctx() {
  thread_local std::unique_ptr<ZSTD_CCtx, CCtxFree> cctx(ZSTD_createCCtx());
  if (!cctx) throw std::bad_alloc();
  return cctx.get();
}
ZSTD_DCtx* thread_dctx() {
  thread_local std::unique_ptr<ZSTD_DCtx, DCtxFree> dctx(ZSTD_createDCtx());
  if (!dctx) throw std::bad_alloc();
  return dctx.get();
}

void put_varint(std::string& out, std::uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

// Reads a varint put_varint wrote at `at` (the marks are retrace's own: never outside input).
std::uint64_t get_varint(std::string_view in, std::size_t& at) {
  std::uint64_t value = 0;
  for (int shift = 0; at < in.size() && shift < 64; shift += 7) {
    auto byte = static_cast<unsigned char>(in[at++]);
    value |= std::uint64_t(byte & 0x7f) << shift;
    if (!(byte & 0x80)) break;
  }
  return value;
}

std::uint64_t zigzag(std::int64_t v) { return (std::uint64_t(v) << 1) ^ std::uint64_t(v >> 63); }
std::int64_t unzigzag(std::uint64_t v) { return std::int64_t(v >> 1) ^ -std::int64_t(v & 1); }

// Decompresses block `block` (kBlockBytes raw) into `out`.
void unpack(const std::string& block, std::string& out) {
  out.resize(ArrivedBody::kBlockBytes);
  auto n = ZSTD_decompressDCtx(thread_dctx(), out.data(), out.size(), block.data(), block.size());
  if (ZSTD_isError(n) || n != ArrivedBody::kBlockBytes)
    throw std::runtime_error(std::string("retrace's own compressed response block did not decompress: ") +
                             (ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short block"));
}

}  // namespace

void ArrivedBody::append(std::string_view piece, std::int64_t offset_ns) {
  put_varint(marks_, zigzag(offset_ns - last_ns_));
  put_varint(marks_, piece.size());
  last_ns_ = offset_ns;
  ++reads_;
  size_ += piece.size();
  while (!piece.empty()) {
    auto take = std::min(piece.size(), kBlockBytes - tail_.size());
    if (tail_.size() + take > tail_.capacity())  // grow by doubling, but never past a block
      tail_.reserve(std::min(kBlockBytes, std::max(tail_.size() + take, 2 * tail_.capacity())));
    tail_.append(piece.substr(0, take));
    piece.remove_prefix(take);
    if (tail_.size() == kBlockBytes) seal();
  }
}

bool ArrivedBody::append_within(std::string_view piece, std::int64_t offset_ns, std::size_t limit) {
  const bool within = piece.size() <= room(limit);
  if (!within) piece = piece.substr(0, room(limit));
  if (!piece.empty()) append(piece, offset_ns);
  return within;
}

void ArrivedBody::assign_unmarked(std::string body) {
  *this = {};
  size_ = body.size();
  tail_ = std::move(body);  // kept raw: a body retrace wrote itself is small
}

void ArrivedBody::seal() {
  thread_local std::string scratch;
  scratch.resize(ZSTD_compressBound(tail_.size()));
  auto n = ZSTD_compressCCtx(thread_cctx(), scratch.data(), scratch.size(), tail_.data(), tail_.size(), kLevel);
  if (ZSTD_isError(n)) throw std::runtime_error(std::string("compressing a response block: ") + ZSTD_getErrorName(n));
  blocks_.emplace_back(scratch.data(), n);  // at its exact size
  tail_.clear();                            // its capacity (a block) is reused
}

std::size_t ArrivedBody::held_bytes() const {
  std::size_t held = tail_.capacity() + marks_.capacity() + blocks_.capacity() * sizeof(std::string);
  for (const auto& block : blocks_) held += block.size();
  return held;
}

void ArrivedBody::reserve_like(ArrivedSize last) {
  constexpr std::size_t kMostReserved = 1u << 20;
  auto with_margin = [](std::size_t n) { return n + n / 8; };
  marks_.reserve(std::min(with_margin(last.mark_bytes), kMostReserved));
  blocks_.reserve(std::min(with_margin(last.bytes / kBlockBytes), kMostReserved / sizeof(std::string)));
  // The raw tail as well: a stream under a block (128 tokens with logprobs is ~48 KB) would
  // otherwise copy its bytes again on each doubling, on the relay's thread (bench/RESULTS.md,
  // "record: the relay's copies").
  tail_.reserve(std::min(kBlockBytes, with_margin(last.bytes)));
}

void ArrivedBody::for_each_read(const std::function<bool(std::string_view, std::int64_t, bool)>& visit) const {
  std::string block;  // the one block decompressed at a time
  std::size_t next_block = 0;
  std::string_view bytes;  // what is left of the current block (or the tail)
  auto refill = [&] {
    if (next_block < blocks_.size()) {
      unpack(blocks_[next_block++], block);
      bytes = block;
    } else if (next_block == blocks_.size()) {
      ++next_block;
      bytes = tail_;
    }
  };
  std::size_t at = 0;
  std::int64_t offset_ns = 0;
  for (std::size_t read = 0; read < reads_; ++read) {
    offset_ns += unzigzag(get_varint(marks_, at));
    auto length = get_varint(marks_, at);
    do {
      if (bytes.empty()) refill();
      if (bytes.empty() && length > 0) throw std::logic_error("response marks past the body's bytes");
      auto take = std::min<std::size_t>(length, bytes.size());
      length -= take;
      if (!visit(bytes.substr(0, take), offset_ns, length == 0)) return;
      bytes.remove_prefix(take);
    } while (length > 0);
  }
}

std::string ArrivedBody::take_all() {
  std::string all;
  if (blocks_.empty()) {
    all = std::move(tail_);
  } else {
    all.reserve(size_);
    std::string block;
    for (const auto& packed : blocks_) {
      unpack(packed, block);
      all += block;
    }
    all += tail_;
  }
  *this = {};
  return all;
}

}  // namespace retrace::net
