// The .rtrace writer and reader; the byte layout is written once, in format/trace.capnp.
//
// This file is the reader's record layer: messages walked by their segment tables in the frame
// the frame layer decoded (frame_reader.hpp: file input, frames, the index, damage and the torn
// tail), the header record, and each exchange read whole or for its outputs. Past the header, a
// torn or corrupt tail ends the stream and is reported in Recovery, not thrown. A segment set
// (segments.hpp) is walked segment by segment here, one FrameReader open at a time.
#include <capnp/message.h>
#include <capnp/serialize.h>

#include <cstring>
#include <optional>
#include <span>
#include <kj/exception.h>

#include "format/frame_reader.hpp"
#include "format/record_access.hpp"
#include "format/segments.hpp"
#include "format/trace.hpp"
#include "format/token_deriver.hpp"
#include "format/wire.hpp"

namespace retrace {

using namespace detail;

struct TraceReader::Impl {
  ReaderOptions options;
  std::filesystem::path path;
  std::optional<FrameReader> frames;  // the file, or the segment being read
  // The frame being walked (frames->words()) and the next message's place in it, in words.
  std::span<const std::uint64_t> frame;
  std::size_t frame_cursor = 0;
  std::uint32_t frame_message = 0;  // messages of the frame taken so far
  TraceHeader header;
  // The message next_record() returned, and the one next(ExchangeOutputs&) did (for
  // read_last(); valid until the frame is left, i.e. until the next call of next()).
  kj::ArrayPtr<const capnp::word> current;
  std::optional<kj::ArrayPtr<const capnp::word>> last;
  std::function<void(const MetricScrape&)> on_metrics;  // null: scrape records are skipped
  MetricScrape scrape;  // reused for each scrape record

  // A segment set: its numbers, the one being read (numbers[segment]), what the segments left
  // behind had to drop, and their sizes.
  std::vector<std::uint64_t> numbers;
  std::size_t segment = 0;
  Recovery left;
  mutable Recovery combined;
  std::uint64_t left_file_bytes = 0;
  std::uint64_t left_decompressed = 0;
  std::uint64_t peak_buffer = 0;

  Impl(const std::filesystem::path& trace, const ReaderOptions& reader_options)
      : options(reader_options), path(trace) {}

  bool is_set() const { return !numbers.empty(); }
  std::filesystem::path segment_path(std::size_t at) const {
    return path / segment_file_name(numbers[at]);
  }

  // Opens `file` and reads its header record into `into`; throws TraceError naming `file`.
  void open_file(const std::filesystem::path& file, TraceHeader& into) {
    frames.reset();
    frames.emplace(file, options);
    if (!load_frame())
      throw TraceError("cannot read trace " + file.string() + ": no readable header: " +
                       frames->recovery().reason + " at offset " +
                       std::to_string(frames->recovery().dropped_from_offset));
    auto message = next_message();
    if (!message || message->size() == 0)
      throw TraceError("cannot read trace " + file.string() + ": no readable header: " +
                       (message ? "the first frame is empty" : frames->recovery().reason));
    try {
      capnp::FlatArrayMessageReader reader(*message, frames->capnp_options());
      auto record = reader.getRoot<wire::Record>();
      if (!record.isHeader())
        throw TraceError("cannot read trace " + file.string() +
                         ": the first record is not a header (is this a retrace trace?)");
      auto header = record.getHeader();
      ListBudget budget(message->size());
      read_header(header, into, budget);
    } catch (const kj::Exception& e) {
      throw TraceError("cannot read trace " + file.string() + ": corrupt header: " +
                       e.getDescription().cStr());
    } catch (const TraceError& e) {
      throw TraceError("cannot read trace " + file.string() + ": corrupt header: " + e.what());
    }
    if (into.format_major > kFormatMajor)
      throw TraceError(file.string() + " uses trace format " + std::to_string(into.format_major) +
                       "." + std::to_string(into.format_minor) + ", but this retrace reads format " +
                       std::to_string(kFormatMajor) + "." + std::to_string(kFormatMinor) +
                       " and older; upgrade retrace to read it");
    frames->begin_records();
  }

  // A segment that cannot be read at all, or whose reading ended torn before the last: a skipped
  // region of the set, named.
  void note_left_behind(std::size_t at, std::uint64_t bytes, const std::string& why) {
    if (left.skipped_regions++ == 0) {
      left.first_skipped_offset = 0;
      left.skipped_reason = "segment " + segment_path(at).filename().string() + ": " + why;
    }
    left.skipped_bytes += bytes;
  }

  // Folds the segment just read into `left`.
  void leave_segment() {
    if (!frames) return;
    const Recovery& done = frames->recovery();
    if (done.skipped_regions > 0) {
      if (left.skipped_regions == 0)
        left.skipped_reason = "segment " + segment_path(segment).filename().string() + ": " + done.skipped_reason;
      left.skipped_regions += done.skipped_regions;
      left.skipped_bytes += done.skipped_bytes;
    }
    if (done.torn) note_left_behind(segment, done.dropped_bytes, "torn tail (" + done.reason + ")");
    left_file_bytes += frames->file_size();
    left_decompressed += frames->decompressed_bytes();
    peak_buffer = std::max(peak_buffer, frames->peak_buffer_bytes());
    frames.reset();
  }

  // Notes the gap between numbers[at - 1] and numbers[at], if any.
  void note_gap(std::size_t at) {
    if (at == 0) return;
    std::uint64_t missing = numbers[at] - numbers[at - 1] - 1;
    if (missing == 0) return;
    if (left.missing_segments == 0) left.first_missing_segment = numbers[at - 1] + 1;
    left.missing_segments += missing;
  }

  // Opens the first readable segment from `from` on (its header into `into`); false when none is.
  bool open_segment_from(std::size_t from, TraceHeader& into, std::string* first_error) {
    for (std::size_t at = from; at < numbers.size(); ++at) {
      note_gap(at);
      segment = at;
      try {
        open_file(segment_path(at), into);
        return true;
      } catch (const TraceError& e) {
        if (first_error && first_error->empty()) *first_error = e.what();
        std::error_code ignored;
        auto bytes = std::filesystem::file_size(segment_path(at), ignored);
        note_left_behind(at, ignored ? 0 : bytes, e.what());
        frames.reset();
      }
    }
    return false;
  }

  // The current segment ended: on to the next; false at the set's end.
  bool advance_segment() {
    if (!is_set() || segment + 1 >= numbers.size()) return false;
    leave_segment();
    TraceHeader ignored;
    return open_segment_from(segment + 1, ignored, nullptr);
  }

  // The next frame to walk; false at the end of the stream (frames->recovery() says why).
  bool load_frame() {
    frame = {};
    frame_cursor = 0;
    frame_message = 0;
    if (!frames->load_frame()) return false;
    frame = frames->words();
    return true;
  }

  // A record of the current frame is corrupt: the frame's remaining records are dropped.
  void skip_frame_rest(std::string reason) {
    frame_cursor = frame.size();
    frames->drop_frame_rest(std::move(reason));
  }

  // The next message of the current frame as a word range; empty at the frame's end. Notes the
  // damage and returns nullopt when the frame's contents are not a message sequence.
  std::optional<kj::ArrayPtr<const capnp::word>> next_message() {
    const std::uint64_t* base = frame.data() + frame_cursor;
    std::size_t remaining = frame.size() - frame_cursor;
    if (remaining == 0) return kj::ArrayPtr<const capnp::word>();
    std::uint32_t first[2];
    std::memcpy(first, base, 8);
    std::uint64_t segment_count = std::uint64_t{first[0]} + 1;
    std::uint64_t table_words = segment_count / 2 + 1;
    if (segment_count > 512 || table_words > remaining) {
      skip_frame_rest("a corrupt Cap'n Proto segment table in the frame");
      return std::nullopt;
    }
    std::uint64_t total = table_words;
    const char* table = reinterpret_cast<const char*>(base);
    for (std::uint64_t i = 0; i < segment_count; ++i) total += load_le32(table + 4 + 4 * i);
    if (total > remaining) {
      skip_frame_rest("a Cap'n Proto message runs past the end of its frame");
      return std::nullopt;
    }
    frame_cursor += total;
    ++frame_message;
    return kj::ArrayPtr<const capnp::word>(reinterpret_cast<const capnp::word*>(base), total);
  }

  // The next exchange record, given to `read` (wire::Exchange::Reader, ListBudget&); false at the
  // end. A record `read` finds corrupt drops the rest of its frame. `current` is its message.
  template <class Read>
  bool next_record(Read read) {
    last.reset();
    for (;;) {
    while (frames && !frames->ended()) {
      auto message = next_message();
      if (!message) continue;  // the rest of a corrupt frame was skipped
      if (message->size() == 0) {
        if (!load_frame()) break;
        continue;
      }
      try {
        capnp::FlatArrayMessageReader reader(*message, frames->capnp_options());
        auto record = reader.getRoot<wire::Record>();
        if (record.which() == wire::Record::METRICS && on_metrics) {
          ListBudget budget(message->size());
          read_metrics(record.getMetrics(), scrape, budget);
          on_metrics(scrape);
          continue;
        }
        if (record.which() != wire::Record::EXCHANGE) continue;  // a repeated header, or newer kinds
        ListBudget budget(message->size());
        read(record.getExchange(), budget);
        current = *message;
        return true;
      } catch (const kj::Exception& e) {
        skip_frame_rest(std::string("a corrupt record in the frame: ") + e.getDescription().cStr());
      } catch (const NoTokenDeriver&) {
        throw;  // the program's fault, not the record's: nothing is skipped as damaged
      } catch (const UnsendableRequest& e) {
        frames->skip_record(message->size() * sizeof(capnp::word), e.what());
      } catch (const TraceError& e) {
        skip_frame_rest(e.what());
      }
    }
    if (!advance_segment()) return false;
    }
  }
};

RecordPosition TraceReader::position() const {
  const Impl& impl = *impl_;
  return {impl.is_set() ? impl.numbers[impl.segment] : 0, impl.frames ? impl.frames->frame_offset() : 0,
          impl.frame_message == 0 ? 0 : impl.frame_message - 1};
}

void TraceReader::read_request_at(RecordPosition at, Exchange& out) {
  Impl& impl = *impl_;
  auto changed = [&](const std::string& why) {
    return TraceError((impl.frames ? impl.frames->path() : impl.path).string() + " changed since it was planned from: " + why +
                      " (frame at offset " + std::to_string(at.frame_offset) + ", record " +
                      std::to_string(at.message) + ")");
  };
  if (impl.is_set() && (!impl.frames || impl.numbers[impl.segment] != at.segment)) {
    // Another segment of the set: open it (its header read and set aside).
    auto found = std::lower_bound(impl.numbers.begin(), impl.numbers.end(), at.segment);
    if (found == impl.numbers.end() || *found != at.segment) throw changed("no such segment");
    impl.frame = {};
    impl.segment = static_cast<std::size_t>(found - impl.numbers.begin());
    TraceHeader ignored;
    try {
      impl.open_file(impl.segment_path(impl.segment), ignored);
    } catch (const TraceError& e) {
      impl.frames.reset();
      throw changed(e.what());
    }
  }
  bool here = !impl.frame.empty() && impl.frames->frame_offset() == at.frame_offset &&
              impl.frame_message <= at.message;
  if (!here) {
    impl.frame = {};
    impl.frame_cursor = 0;
    impl.frame_message = 0;
    if (!impl.frames->load_frame_at(at.frame_offset)) throw changed("no readable frame there");
    impl.frame = impl.frames->words();
  }
  while (impl.frame_message < at.message) {
    auto message = impl.next_message();
    if (!message || message->size() == 0) throw changed("the frame holds fewer records");
  }
  auto message = impl.next_message();
  if (!message || message->size() == 0) throw changed("the frame holds fewer records");
  try {
    capnp::FlatArrayMessageReader reader(*message, impl.frames->capnp_options());
    auto record = reader.getRoot<wire::Record>();
    if (record.which() != wire::Record::EXCHANGE) throw changed("the record is not an exchange");
    ListBudget budget(message->size());
    read_exchange(record.getExchange(), out, budget, true);
  } catch (const kj::Exception& e) {
    throw changed(std::string("a corrupt record: ") + e.getDescription().cStr());
  } catch (const UnsendableRequest& e) {
    throw changed(e.what());
  }
  impl.current = *message;
  impl.last.reset();
}

TraceReader::TraceReader(const std::filesystem::path& path, ReaderOptions options)
    : impl_(std::make_unique<Impl>(path, options)) {
  Impl& impl = *impl_;
  std::error_code error;
  if (!std::filesystem::is_directory(path, error)) {
    impl.open_file(path, impl.header);
    return;
  }
  impl.numbers = list_segments(path).numbers;
  if (impl.numbers.empty())
    throw TraceError(path.string() + " is a directory but holds no segments (" +
                     segment_file_name(1) + ", ...): give a trace file, or a directory that "
                     "`retrace record --out DIR/` wrote");
  std::string first_error;
  if (!impl.open_segment_from(0, impl.header, &first_error))
    throw TraceError("cannot read the segment set " + path.string() + ": none of its " +
                     std::to_string(impl.numbers.size()) + " segment(s) is readable; the first: " +
                     first_error);
}

TraceReader::~TraceReader() = default;

const TraceHeader& TraceReader::header() const { return impl_->header; }

bool TraceReader::next(Exchange& out) {
  return impl_->next_record([&](wire::Exchange::Reader exchange, ListBudget& budget) {
    read_exchange(exchange, out, budget, false, impl_->options.derived);
  });
}

bool TraceReader::next_request(Exchange& out) {
  return impl_->next_record([&](wire::Exchange::Reader exchange, ListBudget& budget) {
    read_exchange(exchange, out, budget, true);
  });
}

bool TraceReader::next(ExchangeOutputs& out) {
  Impl& impl = *impl_;
  if (!impl.next_record([&](wire::Exchange::Reader exchange, ListBudget& budget) {
        read_outputs(exchange, out, budget);
      }))
    return false;
  impl.last = impl.current;
  return true;
}

void TraceReader::read_last(Exchange& out) {
  Impl& impl = *impl_;
  if (!impl.last)
    throw TraceError("cannot read trace " + impl.path.string() + ": no exchange was read to be read whole");
  try {
    capnp::FlatArrayMessageReader reader(*impl.last, impl.frames->capnp_options());
    ListBudget budget(impl.last->size());
    read_exchange(reader.getRoot<wire::Record>().getExchange(), out, budget, false, impl.options.derived);
  } catch (const kj::Exception& e) {
    throw TraceError("cannot read trace " + impl.frames->path().string() + ": a corrupt record in the frame at offset " +
                     std::to_string(impl.frames->frame_offset()) + ": " + e.getDescription().cStr());
  } catch (const TraceError& e) {
    throw TraceError("cannot read trace " + impl.frames->path().string() + ": " + e.what());
  }
}

void TraceReader::on_metrics(std::function<void(const MetricScrape&)> sink) {
  impl_->on_metrics = std::move(sink);
}

const Recovery& TraceReader::recovery() const {
  const Impl& impl = *impl_;
  if (!impl.is_set()) return impl.frames->recovery();
  // The segments left behind, then the current one (whose torn tail is the set's).
  impl.combined = impl.left;
  if (impl.frames) {
    const Recovery& now = impl.frames->recovery();
    impl.combined.torn = now.torn;
    impl.combined.dropped_from_offset = now.dropped_from_offset;
    impl.combined.dropped_bytes = now.dropped_bytes;
    if (now.torn)
      impl.combined.reason = "segment " + impl.segment_path(impl.segment).filename().string() + ": " + now.reason;
    if (now.skipped_regions > 0) {
      if (impl.combined.skipped_regions == 0) {
        impl.combined.first_skipped_offset = now.first_skipped_offset;
        impl.combined.skipped_reason = "segment " + impl.segment_path(impl.segment).filename().string() + ": " + now.skipped_reason;
      }
      impl.combined.skipped_regions += now.skipped_regions;
      impl.combined.skipped_bytes += now.skipped_bytes;
    }
  }
  return impl.combined;
}

std::string describe(const Recovery& recovery) {
  std::string text;
  if (recovery.missing_segments > 0)
    text = std::to_string(recovery.missing_segments) + " segment(s) missing from the set (a gap in "
           "the numbers, the first " + segment_file_name(recovery.first_missing_segment) + ")";
  if (recovery.torn)
    text += std::string(text.empty() ? "" : "; ") + "torn tail: dropped " + std::to_string(recovery.dropped_bytes) + " bytes from offset " +
           std::to_string(recovery.dropped_from_offset) + " (" + recovery.reason + ")";
  if (recovery.skipped_regions > 0) {
    if (!text.empty()) text += "; ";
    text += "skipped " + std::to_string(recovery.skipped_regions) + " damaged region" +
            (recovery.skipped_regions == 1 ? "" : "s") + ", " +
            std::to_string(recovery.skipped_bytes) + " bytes, the first at offset " +
            std::to_string(recovery.first_skipped_offset) + " (" + recovery.skipped_reason + ")";
  }
  return text;
}
std::uint64_t TraceReader::file_size() const {
  return impl_->left_file_bytes + (impl_->frames ? impl_->frames->file_size() : 0);
}
std::uint64_t TraceReader::decompressed_bytes() const {
  return impl_->left_decompressed + (impl_->frames ? impl_->frames->decompressed_bytes() : 0);
}
bool TraceReader::has_index() const { return impl_->frames && impl_->frames->has_index(); }
const TraceIndex& TraceReader::index() const {
  static const TraceIndex none;
  return impl_->frames ? impl_->frames->index() : none;
}
std::uint64_t TraceReader::peak_buffer_bytes() const {
  return std::max(impl_->peak_buffer, impl_->frames ? impl_->frames->peak_buffer_bytes() : 0);
}

// format/record_access.hpp: the reader's records walked by another reading of them (RowReader).
struct RecordAccess {
  static bool next(TraceReader& reader, const ExchangeRecordRead& read) { return reader.impl_->next_record(std::cref(read)); }
};
bool next_exchange_record(TraceReader& reader, const ExchangeRecordRead& read) {
  return RecordAccess::next(reader, read);
}

}  // namespace retrace
