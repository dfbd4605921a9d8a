// The .rtrace writer and reader; the byte layout is written once, in format/trace.capnp.
//
// This file is the writer: one Cap'n Proto builder per record over a reused zeroed scratch
// segment, compressed into the open frame, a frame closed on every flush, once it holds
// frame_target_bytes (a reader's memory is one frame) and before a record would take it past
// max_frame_bytes (what the reader accepts). The index grows on disk, not in
// memory (index_spill.hpp), so a recording of any length runs in flat memory.
#include <capnp/message.h>
#include <capnp/serialize.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_getFrameProgression: what the compressor still holds
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

#include "format/index_spill.hpp"
#include "format/token_deriver.hpp"
#include "format/trace.hpp"
#include "format/wire.hpp"

namespace retrace {

using namespace detail;

struct TraceWriter::Impl {
  std::filesystem::path path;
  WriterOptions options;
  int fd = -1;
  ZSTD_CCtx* compressor = nullptr;
  // The first segment of every record's builder; MallocMessageBuilder zeroes what it used when
  // it is destroyed, so the scratch stays zeroed between records.
  std::vector<std::uint64_t> scratch;
  // What the scratch grows to before the next record: the words of the largest record that
  // overflowed it, up to kMostScratchWords. A long streamed exchange's record (~10 MB for 16,000
  // tokens with logprobs) then reuses one warm segment instead of allocating its segments anew,
  // whose pages the kernel faulted in again for each such record (bench/RESULTS.md, "One long
  // exchange decoded at a time"); the writer keeps at most that much, as long as it lives.
  static constexpr std::size_t kMostScratchWords = (16u << 20) / sizeof(capnp::word);
  std::size_t scratch_wanted = 0;
  std::vector<Choice> derived_scratch;  // what the deriver made of the exchange being written
  // Compressed bytes not yet written to the file: compressed[0, compressed_size). Grown without
  // zero-filling (a std::string's resize would clear the room given to zstd on every call).
  std::unique_ptr<char[]> compressed;
  std::size_t compressed_size = 0;
  std::size_t compressed_capacity = 0;
  std::vector<std::uint32_t> segment_table;
  std::uint64_t file_offset = 0;
  std::uint64_t exchanges = 0;
  std::uint64_t records = 0;
  // The frame being built.
  bool frame_open = false;
  std::uint64_t frame_offset = 0;
  std::uint64_t frame_first_record = 0;
  std::uint32_t frame_records = 0;
  std::uint64_t frame_bytes = 0;  // decompressed
  std::chrono::steady_clock::time_point frame_started;
  std::uint32_t frames = 0;  // closed so far
  std::uint64_t frame_exchanges = 0;  // in the open frame
  std::uint64_t flushed_exchanges = 0;  // in frames wholly written to the file
  std::unique_ptr<IndexSpill> index;  // null without write_index
  std::string index_note;
  bool closed = false;

  ~Impl() {
    if (compressor) ZSTD_freeCCtx(compressor);
    if (fd >= 0) ::close(fd);
  }

  [[noreturn]] void fail(const std::string& what, int error) {
    throw TraceError("cannot write trace " + path.string() + " at offset " +
                     std::to_string(file_offset) + ": " + what + ": " + errno_text(error) +
                     (error == ENOSPC ? " (the disk is full; free space or write elsewhere)" : ""));
  }

  // Makes room for `more` bytes after compressed_size, keeping what is there.
  char* reserve(std::size_t more) {
    if (compressed_size + more > compressed_capacity) {
      std::size_t capacity = std::max(compressed_size + more, 2 * compressed_capacity);
      auto grown = std::make_unique_for_overwrite<char[]>(capacity);
      std::copy_n(compressed.get(), compressed_size, grown.get());
      compressed = std::move(grown);
      compressed_capacity = capacity;
    }
    return compressed.get() + compressed_size;
  }

  void append(const void* bytes, std::size_t size) {
    std::copy_n(static_cast<const char*>(bytes), size, reserve(size));
    compressed_size += size;
  }

  void write_out() {
    std::size_t done = 0;
    while (done < compressed_size) {
      ssize_t n = ::write(fd, compressed.get() + done, compressed_size - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        int error = errno;
        std::copy(compressed.get() + done, compressed.get() + compressed_size, compressed.get());
        compressed_size -= done;
        fail("write failed", error);
      }
      done += static_cast<std::size_t>(n);
      file_offset += static_cast<std::uint64_t>(n);
    }
    compressed_size = 0;
  }

  void compress(const void* bytes, std::size_t size, ZSTD_EndDirective mode) {
    ZSTD_inBuffer input{bytes, size, 0};
    for (;;) {
      std::size_t room = std::max<std::size_t>(ZSTD_CStreamOutSize(), size / 2 + 1024);
      ZSTD_outBuffer output{reserve(room), room, 0};
      std::size_t remaining = ZSTD_compressStream2(compressor, &output, &input, mode);
      compressed_size += output.pos;
      if (ZSTD_isError(remaining))
        throw TraceError("cannot compress trace " + path.string() + ": " +
                         ZSTD_getErrorName(remaining));
      bool done = mode == ZSTD_e_continue ? input.pos == input.size : remaining == 0;
      if (done) break;
    }
    // Large frames reach the file as they grow, so memory stays bounded by the frame buffer.
    if (compressed_size >= (1u << 20)) write_out();
  }

  // Builds one record and appends it to the open frame (opening one), unless its framed size
  // passes max_frame_bytes: then nothing is written and it returns false. A frame that the record
  // would take past max_frame_bytes is closed first.
  template <class Fill>
  bool append_record(Fill&& fill) {
    if (scratch_wanted > scratch.size()) scratch.assign(scratch_wanted, 0);  // zeroed, as the builder wants
    capnp::MallocMessageBuilder builder(
        kj::arrayPtr(reinterpret_cast<capnp::word*>(scratch.data()), scratch.size()));
    try {
      fill(builder.initRoot<wire::Record>());
    } catch (const kj::Exception&) {
      return false;  // a field past what a blob holds (kMaxBlobBytes): the record cannot be built
    }
    auto segments = builder.getSegmentsForOutput();
    // Stream framing: u32 (segment count - 1), u32 size of each segment, padded to 8 bytes.
    segment_table.assign((segments.size() + 2) & ~std::size_t{1}, 0);
    segment_table[0] = static_cast<std::uint32_t>(segments.size() - 1);
    std::uint64_t bytes = segment_table.size() * 4;
    for (std::size_t i = 0; i < segments.size(); ++i) {
      segment_table[i + 1] = static_cast<std::uint32_t>(segments[i].size());
      bytes += segments[i].size() * sizeof(capnp::word);
    }
    if (segments.size() > 1)
      scratch_wanted = std::max(scratch_wanted, std::min(bytes / sizeof(capnp::word), kMostScratchWords));
    if (bytes > options.max_frame_bytes) return false;
    if (frame_open && frame_bytes + bytes > options.max_frame_bytes) end_frame();
    if (!frame_open) {
      frame_open = true;
      frame_offset = file_offset + compressed_size;
      frame_first_record = records;
      frame_records = 0;
      frame_bytes = 0;
      frame_started = options.clock->now();
    }
    compress(segment_table.data(), segment_table.size() * 4, ZSTD_e_continue);
    for (auto segment : segments)
      compress(segment.begin(), segment.size() * sizeof(capnp::word), ZSTD_e_continue);
    frame_bytes += bytes;
    ++records;
    ++frame_records;
    return true;
  }

  void end_frame() {
    if (!frame_open) return;
    compress(nullptr, 0, ZSTD_e_end);
    if (index) index->add_frame(frame_offset, frame_first_record, frame_records);
    ++frames;
    frame_open = false;
    write_out();
    flushed_exchanges += frame_exchanges;
    frame_exchanges = 0;
  }

  // Appends the index frame; when it cannot be written whole, the file is cut back to where it
  // began and index_note says why. It never throws: the frames before it are all written.
  void write_index() {
    std::uint64_t start = file_offset;
    std::uint32_t prefix[2] = {kIndexMagic, static_cast<std::uint32_t>(index->message_bytes())};
    append(prefix, sizeof prefix);
    try {
      bool whole = index->write([this](const void* bytes, std::size_t size) {
        append(bytes, size);
        if (compressed_size >= (1u << 20)) write_out();
      });
      if (whole) {
        write_out();
        return;
      }
      index_note = index->note();
    } catch (const TraceError& e) {
      // Every frame is in the file; only the optional index did not fit (a full disk).
      index_note = std::string("no index written: ") + e.what();
    }
    compressed_size = 0;
    if (file_offset != start && ::ftruncate(fd, static_cast<off_t>(start)) == 0) file_offset = start;
  }
};

TraceWriter::TraceWriter(const std::filesystem::path& path, const TraceHeader& header,
                         WriterOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  impl_->options = options;
  if (impl_->options.flush_every == 0) impl_->options.flush_every = 1;
  // Never through a symlink (ELOOP): a trace is written where it is named, not where a link
  // someone planted under its name points (base/private_file.hpp).
  impl_->fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (impl_->fd < 0) {
    int error = errno;
    throw TraceError("cannot create trace " + path.string() + ": " + errno_text(error));
  }
  // An existing file keeps its mode through O_TRUNC; traces hold prompts and headers, so narrow it.
  struct stat status {};
  if (::fstat(impl_->fd, &status) == 0 && S_ISREG(status.st_mode) &&
      (status.st_mode & 0077) != 0)
    ::fchmod(impl_->fd, 0600);

  impl_->compressor = ZSTD_createCCtx();
  if (!impl_->compressor) throw TraceError("cannot create a zstd compressor (out of memory)");
  ZSTD_CCtx_setParameter(impl_->compressor, ZSTD_c_compressionLevel, options.zstd_level);
  ZSTD_CCtx_setParameter(impl_->compressor, ZSTD_c_checksumFlag, 1);
  impl_->scratch.assign(64 * 1024, 0);
  if (impl_->options.write_index)
    impl_->index = std::make_unique<IndexSpill>(path, impl_->options.max_frame_bytes);  // 512 KiB: a long streamed exchange fits one segment

  // The file is written in this writer's format, whatever version the caller's header came from.
  TraceHeader stamped = header;
  stamped.format_major = kFormatMajor;
  stamped.format_minor = kFormatMinor;
  if (!impl_->append_record(
          [&](wire::Record::Builder record) { fill_header(record.initHeader(), stamped); }))
    throw TraceError("cannot write trace " + path.string() +
                     ": its header is larger than a trace message may be (" +
                     std::to_string(impl_->options.max_frame_bytes) + " bytes)");
  impl_->end_frame();
}

TraceWriter::~TraceWriter() {
  try {
    close();
  } catch (...) {
    // Documented: the destructor swallows; close() reports.
  }
}

namespace {

// A copy of everything but the bodies and events: what is kept of an exchange too large to store.
// Field by field, so that a body of hundreds of MiB is not copied only to be cleared (a field
// added to Exchange belongs here too).
Exchange exchange_without_bodies(const Exchange& exchange) {
  Exchange slim;
  slim.id = exchange.id;
  slim.source_id = exchange.source_id;
  slim.key = exchange.key;
  slim.session_id = exchange.session_id;
  slim.start_unix_ns = exchange.start_unix_ns;
  slim.intended_send_ns = exchange.intended_send_ns;
  slim.actual_send_ns = exchange.actual_send_ns;
  slim.first_byte_ns = exchange.first_byte_ns;
  slim.end_ns = exchange.end_ns;
  slim.request.method = exchange.request.method;
  slim.request.target = exchange.request.target;
  slim.request.headers = exchange.request.headers;
  slim.response.status = exchange.response.status;
  slim.response.headers = exchange.response.headers;
  slim.response.streamed = exchange.response.streamed;
  slim.choices = exchange.choices;
  slim.usage = exchange.usage;
  slim.error = exchange.error;
  slim.labels = exchange.labels;
  slim.expected = exchange.expected;
  slim.dialect = exchange.dialect;
  slim.decode_note = exchange.decode_note;
  slim.retries = exchange.retries;
  slim.in_flight_at_send = exchange.in_flight_at_send;
  slim.in_flight_max = exchange.in_flight_max;
  slim.server = exchange.server;
  slim.server_state = exchange.server_state;
  return slim;
}

}  // namespace

void TraceWriter::write(const Exchange& exchange) {
  Impl& impl = *impl_;
  if (impl.closed) throw TraceError("trace " + impl.path.string() + " is already closed");
  auto fill = [](const Exchange& from, bool tokens_derived = false) {
    return [&from, tokens_derived](wire::Record::Builder record) {
      fill_exchange(record.initExchange(), from, tokens_derived);
    };
  };
  // Format 1.7: the tokens left out where the events give them back exactly (token_deriver.hpp),
  // when the writer was asked to.
  const bool derived = impl.options.derive_tokens && tokens_derivable(exchange, impl.derived_scratch);
  std::uint64_t body_bytes = exchange.request.body.size() + exchange.response.body.size();
  for (const auto& event : exchange.response.events) body_bytes += event.data.size();
  // Bodies that with a record's least framing (its segment table, root and structs: well over
  // 64 bytes) pass the limit are not built into a record only to be thrown away.
  bool may_fit = body_bytes + 64 < impl.options.max_frame_bytes;
  if (!may_fit || !impl.append_record(fill(exchange, derived))) {
    auto too_large = " not kept: the exchange would pass the " +
                     std::to_string(impl.options.max_frame_bytes) + " bytes a trace message may hold (" +
                     std::to_string(kMaxBlobBytes) + " one field)";
    Exchange slim = exchange_without_bodies(exchange);
    if (!slim.decode_note.empty()) slim.decode_note += "; ";
    slim.decode_note += "request and response bodies (" + std::to_string(body_bytes) + " bytes)" + too_large;
    if (!impl.append_record(fill(slim))) {
      std::uint64_t token_count = 0;
      for (auto& choice : slim.choices) token_count += choice.tokens.size();
      slim.choices.clear();
      slim.decode_note.resize(std::min<std::size_t>(slim.decode_note.size(), 4096));
      slim.decode_note += "; and its " + std::to_string(token_count) + " tokens" + too_large;
      if (slim.expected && slim.expected->size() > 4096) slim.expected.reset();
      if (!impl.append_record(fill(slim)))
        throw TraceError("cannot write exchange " + std::to_string(exchange.id) + " to trace " +
                         impl.path.string() + ": even without its bodies and tokens it passes the " +
                         std::to_string(impl.options.max_frame_bytes) +
                         " bytes a trace message may hold (its headers are too large)");
    }
  }
  ++impl.exchanges;
  ++impl.frame_exchanges;
  if (impl.index) impl.index->add_key(exchange.id, exchange.key, impl.frames);
  if (impl.frame_records >= impl.options.flush_every ||
      impl.frame_bytes >= impl.options.frame_target_bytes)
    impl.end_frame();
  else
    flush_if_due();
}

void TraceWriter::write(const MetricScrape& scrape) {
  Impl& impl = *impl_;
  if (impl.closed) throw TraceError("trace " + impl.path.string() + " is already closed");
  // Not an exchange: no key in the index, but a record of its frame (frame_records).
  if (!impl.append_record([&](wire::Record::Builder record) { fill_metrics(record.initMetrics(), scrape); }))
    throw TraceError("cannot write a /metrics scrape to trace " + impl.path.string() + ": it passes the " +
                     std::to_string(impl.options.max_frame_bytes) + " bytes a trace message may hold");
  flush_if_due();
}

bool TraceWriter::flush_if_due() {
  Impl& impl = *impl_;
  if (impl.closed || !impl.frame_open || impl.options.flush_ms < 0) return false;
  if (impl.options.clock->now() - impl.frame_started <
      std::chrono::milliseconds(impl.options.flush_ms))
    return false;
  impl.end_frame();
  return true;
}

void TraceWriter::flush() {
  if (impl_->closed) return;
  impl_->end_frame();
}

void TraceWriter::close() {
  Impl& impl = *impl_;
  if (impl.closed) return;
  impl.closed = true;  // even when the flush below throws: a broken file is not retried
  impl.end_frame();
  if (impl.index) {
    impl.write_index();
    if (impl.index_note.empty()) impl.index_note = impl.index->note();
    impl.index.reset();
  }
  int fd = impl.fd;
  impl.fd = -1;
  if (::close(fd) != 0) {
    int error = errno;
    impl.fail("close failed", error);
  }
}

void TraceWriter::append_frame(std::string_view frame, std::uint32_t records,
                               const IndexedKey* keys, std::size_t key_count) {
  Impl& impl = *impl_;
  if (impl.closed) throw TraceError("trace " + impl.path.string() + " is already closed");
  impl.end_frame();
  std::uint64_t offset = impl.file_offset + impl.compressed_size;
  impl.append(frame.data(), frame.size());
  impl.write_out();
  if (impl.index) {
    impl.index->add_frame(offset, impl.records, records);
    for (std::size_t i = 0; i < key_count; ++i)
      impl.index->add_key(keys[i].exchange_id, keys[i].key, impl.frames);
  }
  ++impl.frames;
  impl.records += records;
  impl.exchanges += key_count;
  impl.flushed_exchanges += key_count;
}

std::uint64_t TraceWriter::exchanges_written() const { return impl_->exchanges; }
std::uint64_t TraceWriter::bytes_written() const { return impl_->file_offset; }
std::uint64_t TraceWriter::exchanges_flushed() const { return impl_->flushed_exchanges; }
std::uint64_t TraceWriter::size_estimate() const {
  const Impl& impl = *impl_;
  std::uint64_t held = 0;  // taken by the compressor but not yet given out compressed
  if (impl.frame_open && impl.compressor) {
    auto progress = ZSTD_getFrameProgression(impl.compressor);
    held = progress.ingested - progress.consumed + 8;  // and the frame's checksum and epilogue
  }
  return impl.file_offset + impl.compressed_size + held +
         (impl.index ? impl.index->message_bytes() + 8 : 0);
}
const std::string& TraceWriter::index_note() const { return impl_->index_note; }

}  // namespace retrace
