// A response body held as it arrives, compressed (issue 44 item 4): every byte as received and
// every read's arrival time, exact, in a few bytes a streamed token rather than the raw event.
//
// The bytes go into a raw tail. A body smaller than a block (kBlockBytes: the common non-streamed
// answer) is never compressed: it stays its raw tail. Past a block, the tail stays raw while the
// body is under kMostRawBytes and the raw tails of every body in the process, beyond their first
// block, stay under kRawBudgetBytes: a moderate stream (256 tokens with logprobs is ~95 KB) then
// never pays compressing and decompressing (~0.7 µs a token, bench/RESULTS.md), and the memory
// it holds is bounded in total, not per body. Once either bound is passed, the tail's full blocks
// are compressed with zstd in one shot each (a context per thread, not a stream per body: 1,000
// bodies in flight must not hold 1,000 compressors' windows), kept at their compressed size, and
// every later block is compressed as it fills. Each
// read's mark is two varints, the time since the last read's (zigzag) and the read's length,
// instead of 16 bytes. Reading back is sequential, one block decompressed at a time.
//
// Relaying never waits for this: the relay sends its own read buffer, and only what is kept for
// the trace goes through here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace retrace::net {

// How much a stream took. A workload's streams are alike in length: a worker's next one reserves
// about as much (reserve_like), so its marks are not copied again on every doubling.
struct ArrivedSize {
  std::size_t bytes = 0;       // raw bytes
  std::size_t chunks = 0;      // reads
  std::size_t mark_bytes = 0;  // their marks, encoded
};

class ArrivedBody {
 public:
  // A block's raw size: large enough for zstd to find the events' repetition (a streamed token
  // compresses to ~10-30 bytes, bench/RESULTS.md), small enough that one block decompressed at
  // a time and one raw tail per body in flight cost little.
  static constexpr std::size_t kBlockBytes = 64u << 10;
  // One body's raw tail at most (bytes, a whole number of blocks).
  static constexpr std::size_t kMostRawBytes = 4 * kBlockBytes;
  // Every body's raw tail beyond its first block, in total, at most: 64 streams of 16k tokens
  // held raw this far add at most 16 bytes a token in flight to the ~45-95 they take compressed.
  static constexpr std::size_t kRawBudgetBytes = 16u << 20;

  ArrivedBody() = default;
  ArrivedBody(ArrivedBody&& other) noexcept;
  ArrivedBody& operator=(ArrivedBody&& other) noexcept;
  ArrivedBody(const ArrivedBody& other);  // the copy's raw tail is counted, past the budget if need be
  ArrivedBody& operator=(const ArrivedBody& other) { return *this = ArrivedBody(other); }
  ~ArrivedBody();

  // One read's `piece`, arrived at `offset_ns` (from the request's send).
  void append(std::string_view piece, std::int64_t offset_ns);
  // The same read in steps, for a reader that hands its bytes over in pieces straight from its
  // own buffer (an HTTP parser's chunk bodies, replay/response_reader.hpp): add_bytes() for each
  // piece, then mark_read() once with their total; every byte added must be marked before the
  // body is read back.
  void add_bytes(std::string_view piece);
  void mark_read(std::size_t length, std::int64_t offset_ns);
  // The one rule for a response that passes --max-response-bytes (a stream that never ends): the
  // read's `piece` appended with its mark, cut at `limit` bytes in all. False when the body would
  // pass the limit: the caller stops reading, closes the connection and gives the exchange
  // response_limit_error(); what arrived up to the limit is kept and decoded as usual.
  bool append_within(std::string_view piece, std::int64_t offset_ns, std::size_t limit);
  // The same cut for add_bytes(): `piece` added up to `limit` bytes in all, the part kept left in
  // `piece` (the caller marks it); false when the piece passed the limit.
  bool add_bytes_within(std::string_view& piece, std::size_t limit);
  // How many more bytes append_within() keeps under `limit` (a relay sends the client as many
  // before it appends them: compressing a full block never holds a read back).
  std::size_t room(std::size_t limit) const { return limit > size_ ? limit - size_ : 0; }
  // A whole body with no read marks (a response retrace wrote itself).
  void assign_unmarked(std::string body);

  std::size_t size() const { return size_; }      // raw bytes
  std::size_t reads() const { return reads_; }    // marks
  std::int64_t last_offset_ns() const { return last_ns_; }
  std::size_t held_bytes() const;                 // what it takes in memory, about
  std::size_t compressed_blocks() const { return blocks_.size(); }
  // What every body's raw tail beyond its first block takes now, in total (kRawBudgetBytes).
  static std::size_t raw_budget_used();
  ArrivedSize size_like() const { return {size_, reads_, marks_.size()}; }
  // Reserves the marks and the raw tail `last` took plus an eighth (the marks at most 1 MiB; the
  // tail at most the raw bound when `last` was held raw and the budget has room, else a block).
  void reserve_like(ArrivedSize last);
  // A body whose length is known before its first byte (a Content-Length, cut at the response
  // limit): the raw tail reserved once at `bytes`, so that it is not copied again on each
  // doubling as it fills; a body past the raw bound (kMostRawBytes) has its full blocks
  // compressed as they fill from the start, as it would once past the bound. No-op once a byte
  // is in.
  void reserve_known(std::size_t bytes);
  // What the raw tail can hold without growing (a test's witness that it was not re-grown).
  std::size_t raw_capacity() const { return tail_.capacity(); }

  // Calls `visit(piece, offset_ns, read_ends)` over the bytes in order: each read in one piece,
  // or several where it spans blocks (`read_ends` on its last). Stops when visit returns false.
  // Needs the marks: a body from assign_unmarked() has none (use take_all()).
  void for_each_read(const std::function<bool(std::string_view, std::int64_t, bool)>& visit) const;
  // The whole body, raw; leaves this empty.
  std::string take_all();

 private:
  void seal();                       // compresses the tail's full blocks, the rest stays raw
  void release_raw();                // gives back what the tail took of kRawBudgetBytes
  bool reserve_raw(std::size_t capacity);  // false when the budget has no room for it
  void reserve_tail(std::size_t bytes);    // held raw past a block if the budget allows, else a block at most

  std::vector<std::string> blocks_;  // each kBlockBytes raw, compressed, at its exact size
  std::string tail_;                 // the raw bytes after the last block (< kMostRawBytes)
  std::string marks_;                // per read: varint zigzag(Δ offset_ns), varint length
  std::size_t size_ = 0;
  std::size_t reads_ = 0;
  std::int64_t last_ns_ = 0;
  std::size_t raw_counted_ = 0;      // what tail_'s capacity takes of kRawBudgetBytes
  bool sealing_ = false;             // a bound was passed: every full block is compressed
};

}  // namespace retrace::net
