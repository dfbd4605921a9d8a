// See net/arrived_blocks.hpp.
#include "net/arrived_blocks.hpp"

#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <stdexcept>
#include <utility>

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

// What every body's raw tail beyond its first block takes, in total (kRawBudgetBytes). Bodies
// are appended on one thread and finished on another (record's trace thread), so it is shared;
// it changes once a block at most, never a read.
std::atomic<std::size_t> raw_in_flight{0};

bool take_raw(std::size_t bytes) {
  if (raw_in_flight.fetch_add(bytes, std::memory_order_relaxed) + bytes <= ArrivedBody::kRawBudgetBytes)
    return true;
  raw_in_flight.fetch_sub(bytes, std::memory_order_relaxed);
  return false;
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

ArrivedBody::ArrivedBody(ArrivedBody&& other) noexcept
    : blocks_(std::move(other.blocks_)),
      tail_(std::move(other.tail_)),
      marks_(std::move(other.marks_)),
      size_(other.size_),
      reads_(other.reads_),
      last_ns_(other.last_ns_),
      raw_counted_(std::exchange(other.raw_counted_, 0)),
      sealing_(other.sealing_) {
  other = ArrivedBody();
}

ArrivedBody::ArrivedBody(const ArrivedBody& other)
    : blocks_(other.blocks_),
      tail_(other.tail_),
      marks_(other.marks_),
      size_(other.size_),
      reads_(other.reads_),
      last_ns_(other.last_ns_),
      sealing_(other.sealing_) {
  if (tail_.capacity() > kBlockBytes) {
    raw_counted_ = tail_.capacity() - kBlockBytes;
    raw_in_flight.fetch_add(raw_counted_, std::memory_order_relaxed);
  }
}

ArrivedBody& ArrivedBody::operator=(ArrivedBody&& other) noexcept {
  if (this == &other) return *this;
  release_raw();
  blocks_ = std::move(other.blocks_);
  tail_ = std::move(other.tail_);
  marks_ = std::move(other.marks_);
  size_ = std::exchange(other.size_, 0);
  reads_ = std::exchange(other.reads_, 0);
  last_ns_ = std::exchange(other.last_ns_, 0);
  raw_counted_ = std::exchange(other.raw_counted_, 0);
  sealing_ = std::exchange(other.sealing_, false);
  other.blocks_.clear();
  other.tail_.clear();
  other.marks_.clear();
  return *this;
}

ArrivedBody::~ArrivedBody() { release_raw(); }

std::size_t ArrivedBody::raw_budget_used() { return raw_in_flight.load(std::memory_order_relaxed); }

void ArrivedBody::release_raw() {
  if (raw_counted_ > 0) raw_in_flight.fetch_sub(std::exchange(raw_counted_, 0), std::memory_order_relaxed);
}

bool ArrivedBody::reserve_raw(std::size_t capacity) {
  if (capacity <= tail_.capacity()) return true;
  if (capacity > kBlockBytes) {
    capacity = std::min(capacity, kMostRawBytes);
    const std::size_t counted = capacity - kBlockBytes;
    if (counted > raw_counted_ && !take_raw(counted - raw_counted_)) return false;
    raw_counted_ = std::max(raw_counted_, counted);
  }
  // A fresh string takes exactly what it reserves (a string's own reserve may double instead).
  std::string grown;
  grown.reserve(capacity);
  grown.append(tail_);
  tail_.swap(grown);
  // Were it rounded up all the same, what it holds is counted, past the budget.
  if (tail_.capacity() > kBlockBytes && tail_.capacity() - kBlockBytes > raw_counted_) {
    const std::size_t extra = tail_.capacity() - kBlockBytes - raw_counted_;
    raw_in_flight.fetch_add(extra, std::memory_order_relaxed);
    raw_counted_ += extra;
  }
  return true;
}

void ArrivedBody::append(std::string_view piece, std::int64_t offset_ns) {
  mark_read(piece.size(), offset_ns);
  add_bytes(piece);
}

void ArrivedBody::mark_read(std::size_t length, std::int64_t offset_ns) {
  put_varint(marks_, zigzag(offset_ns - last_ns_));
  put_varint(marks_, length);
  last_ns_ = offset_ns;
  ++reads_;
}

void ArrivedBody::add_bytes(std::string_view piece) {
  size_ += piece.size();
  if (!sealing_) {
    const std::size_t need = tail_.size() + piece.size();
    // Grow by doubling, within the bounds; past one, the full blocks are compressed.
    if ((need <= tail_.capacity() && need <= kMostRawBytes) ||
        (need <= kMostRawBytes && reserve_raw(std::min(kMostRawBytes, std::max(need, 2 * tail_.capacity()))))) {
      tail_.append(piece);
      return;
    }
    seal();
  }
  while (!piece.empty()) {
    auto take = std::min(piece.size(), kBlockBytes - tail_.size());
    if (tail_.size() + take > tail_.capacity())  // grow by doubling, but never past a block
      tail_.reserve(std::min(kBlockBytes, std::max(tail_.size() + take, 2 * tail_.capacity())));
    tail_.append(piece.substr(0, take));
    piece.remove_prefix(take);
    if (tail_.size() == kBlockBytes) seal();
  }
}

bool ArrivedBody::add_bytes_within(std::string_view& piece, std::size_t limit) {
  const bool within = piece.size() <= room(limit);
  if (!within) piece = piece.substr(0, room(limit));
  add_bytes(piece);
  return within;
}

bool ArrivedBody::append_within(std::string_view piece, std::int64_t offset_ns, std::size_t limit) {
  const bool within = add_bytes_within(piece, limit);
  if (!piece.empty()) mark_read(piece.size(), offset_ns);
  return within;
}

void ArrivedBody::assign_unmarked(std::string body) {
  *this = {};
  size_ = body.size();
  tail_ = std::move(body);  // kept raw: a body retrace wrote itself is small
}

void ArrivedBody::seal() {
  sealing_ = true;
  thread_local std::string scratch;
  scratch.resize(ZSTD_compressBound(kBlockBytes));
  const std::size_t full = tail_.size() / kBlockBytes * kBlockBytes;
  for (std::size_t at = 0; at < full; at += kBlockBytes) {
    auto n = ZSTD_compressCCtx(thread_cctx(), scratch.data(), scratch.size(), tail_.data() + at, kBlockBytes, kLevel);
    if (ZSTD_isError(n)) throw std::runtime_error(std::string("compressing a response block: ") + ZSTD_getErrorName(n));
    blocks_.emplace_back(scratch.data(), n);  // at its exact size
  }
  if (tail_.capacity() <= kBlockBytes) {
    tail_.erase(0, full);  // its capacity (a block) is reused
    return;
  }
  std::string rest;  // a tail held raw past a block gives its room back
  rest.reserve(kBlockBytes);
  rest.append(tail_, full);
  tail_.swap(rest);
  release_raw();
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
  // Past a block when the last stream was short enough to be held raw (and the budget has room),
  // its margin cut at the raw bound.
  const std::size_t raw = with_margin(last.bytes);
  reserve_tail(last.bytes <= kMostRawBytes ? std::min(raw, kMostRawBytes) : raw);
}

void ArrivedBody::reserve_tail(std::size_t bytes) {
  if (bytes > kMostRawBytes || !reserve_raw(bytes)) tail_.reserve(std::min(kBlockBytes, bytes));
}

void ArrivedBody::reserve_known(std::size_t bytes) {
  if (size_ != 0) return;
  if (bytes <= kMostRawBytes) return reserve_tail(bytes);
  // It will pass the bound: sealed now, its tail one block, not grown to the bound and copied
  // into blocks then.
  tail_.reserve(kBlockBytes);
  sealing_ = true;
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
