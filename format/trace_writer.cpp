// The .rtrace writer and reader; the byte layout is written once, in format/trace.capnp.
//
// This file is the writer: each record built by Cap'n Proto in place after the open frame's
// records (format/frame_input.hpp), which zstd reads where they are, compressed into the open frame, a frame closed on every flush, once it holds
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

#include "format/frame_input.hpp"
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
  // The open frame's records, built in place and read by zstd where they are
  // (ZSTD_c_stableInBuffer: no copy into zstd's own input buffer), and what zstd has taken of them.
  FrameInput input;
  ZSTD_inBuffer taken{nullptr, 0, 0};
  // The room a frame starts with: its target and the largest record seen, up to
  // kMostRecordWords. A long streamed exchange's record (~10 MB for 16,000 tokens with logprobs)
  // then is built in one warm block instead of segments allocated anew, whose pages the kernel
  // faulted in again for each such record (bench/RESULTS.md, "One long exchange decoded at a
  // time"); room past what a frame starts with is given back when its frame ends.
  static constexpr std::size_t kMostRecordWords = (16u << 20) / sizeof(capnp::word);
  std::size_t largest_record_words = 64 * 1024;
  std::size_t frame_words() const {
    return static_cast<std::size_t>(std::min<std::uint64_t>(options.frame_target_bytes, options.max_frame_bytes) /
                                    sizeof(capnp::word)) + largest_record_words + 2;
  }
  std::vector<Choice> derived_scratch;  // what the deriver made of the exchange being written
  // Compressed bytes not yet written to the file: compressed[0, compressed_size). Grown without
  // zero-filling (a std::string's resize would clear the room given to zstd on every call).
  std::unique_ptr<char[]> compressed;
  std::size_t compressed_size = 0;
  std::size_t compressed_capacity = 0;
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

  // Compresses what the open frame holds that zstd has not taken yet; ZSTD_e_end ends the frame.
  void compress(ZSTD_EndDirective mode) {
    taken.size = input.used_words() * sizeof(capnp::word);
    for (;;) {
      std::size_t room = std::max<std::size_t>(ZSTD_CStreamOutSize(), (taken.size - taken.pos) / 2 + 1024);
      ZSTD_outBuffer output{reserve(room), room, 0};
      std::size_t remaining = ZSTD_compressStream2(compressor, &output, &taken, mode);
      compressed_size += output.pos;
      if (ZSTD_isError(remaining))
        throw TraceError("cannot compress trace " + path.string() + ": " +
                         ZSTD_getErrorName(remaining));
      bool done = mode == ZSTD_e_continue ? taken.pos == taken.size || output.pos < output.size
                                          : remaining == 0;
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
    // At most three builds: one that did not fit the room after the open frame's records, or
    // would take the frame past max_frame_bytes, is built again at the start of a new frame.
    for (int attempt = 0; attempt < 3; ++attempt) {
      if (!frame_open) input.reserve(frame_words());  // the room moves only between frames
      RecordBuilder builder(input);
      bool built = true;
      try {
        fill(builder.initRoot<wire::Record>());
      } catch (const kj::Exception&) {
        built = false;  // a field past what a blob holds (kMaxBlobBytes): the record cannot be built
      }
      const std::size_t room_used = builder.room_words_used();
      std::size_t words = 0;
      for (auto segment : builder.getSegmentsForOutput()) words += segment.size();
      // Framed: one word of segment table and the segment (more for more segments).
      const std::uint64_t bytes = (words + 1) * sizeof(capnp::word);
      if (!built || bytes > options.max_frame_bytes) {
        input.discard(room_used);
        return false;
      }
      if (!builder.in_place() || (frame_open && frame_bytes + bytes > options.max_frame_bytes)) {
        // Larger than the room left: the frame so far is ended, and the record built again in a
        // room it fits (the same bytes: one segment).
        input.discard(room_used);
        largest_record_words = std::max(largest_record_words, std::min(words + 2, kMostRecordWords));
        end_frame();
        input.reserve(frame_words() + words + 2);
        continue;
      }
      input.commit(words);
      if (!frame_open) {
        frame_open = true;
        frame_offset = file_offset + compressed_size;
        frame_first_record = records;
        frame_records = 0;
        frame_bytes = 0;
        frame_started = options.clock->now();
        taken = ZSTD_inBuffer{input.data(), 0, 0};
      }
      compress(ZSTD_e_continue);
      frame_bytes += bytes;
      ++records;
      ++frame_records;
      return true;
    }
    throw TraceError("cannot write trace " + path.string() + ": a record did not fit the room made for it");
  }

  void end_frame() {
    if (!frame_open) return;
    compress(ZSTD_e_end);
    input.clear(frame_words());  // zeroed for the next records; a giant record's room given back
    taken = ZSTD_inBuffer{nullptr, 0, 0};
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
  // zstd reads each frame's records where they are built (FrameInput): ~13 % less of its CPU on
  // replay's and record's records (bench/RESULTS.md, issue 44's writer), the same bytes out.
  ZSTD_CCtx_setParameter(impl_->compressor, ZSTD_c_stableInBuffer, 1);
  // A frame under one block is compressed whole at its end, its size then known: not written in
  // its header, as streamed frames never had it (the reader sizes its buffers as before).
  ZSTD_CCtx_setParameter(impl_->compressor, ZSTD_c_contentSizeFlag, 0);
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
