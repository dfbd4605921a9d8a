// The .rtrace writer and reader; the byte layout is written once, in format/trace.capnp.
//
// This file is the reader's record layer: messages walked by their segment tables in the frame
// the frame layer decoded (frame_reader.hpp: file input, frames, the index, damage and the torn
// tail), the header record, and each exchange read whole or for its outputs. Past the header, a
// torn or corrupt tail ends the stream and is reported in Recovery, not thrown.
#include <capnp/message.h>
#include <capnp/serialize.h>

#include <cstring>
#include <optional>
#include <span>
#include <kj/exception.h>

#include "format/frame_reader.hpp"
#include "format/trace.hpp"
#include "format/wire.hpp"

namespace retrace {

using namespace detail;

struct TraceReader::Impl {
  FrameReader frames;
  // The frame being walked (frames.words()) and the next message's place in it, in words.
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

  Impl(const std::filesystem::path& path, const ReaderOptions& options) : frames(path, options) {}

  // The next frame to walk; false at the end of the stream (frames.recovery() says why).
  bool load_frame() {
    frame = {};
    frame_cursor = 0;
    frame_message = 0;
    if (!frames.load_frame()) return false;
    frame = frames.words();
    return true;
  }

  // A record of the current frame is corrupt: the frame's remaining records are dropped.
  void skip_frame_rest(std::string reason) {
    frame_cursor = frame.size();
    frames.drop_frame_rest(std::move(reason));
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
    while (!frames.ended()) {
      auto message = next_message();
      if (!message) continue;  // the rest of a corrupt frame was skipped
      if (message->size() == 0) {
        if (!load_frame()) return false;
        continue;
      }
      try {
        capnp::FlatArrayMessageReader reader(*message, frames.capnp_options());
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
      } catch (const UnsendableRequest& e) {
        frames.skip_record(message->size() * sizeof(capnp::word), e.what());
      } catch (const TraceError& e) {
        skip_frame_rest(e.what());
      }
    }
    return false;
  }
};

RecordPosition TraceReader::position() const {
  const Impl& impl = *impl_;
  return {impl.frames.frame_offset(), impl.frame_message == 0 ? 0 : impl.frame_message - 1};
}

void TraceReader::read_request_at(RecordPosition at, Exchange& out) {
  Impl& impl = *impl_;
  auto changed = [&](const std::string& why) {
    return TraceError(impl.frames.path().string() + " changed since it was planned from: " + why +
                      " (frame at offset " + std::to_string(at.frame_offset) + ", record " +
                      std::to_string(at.message) + ")");
  };
  bool here = !impl.frame.empty() && impl.frames.frame_offset() == at.frame_offset &&
              impl.frame_message <= at.message;
  if (!here) {
    impl.frame = {};
    impl.frame_cursor = 0;
    impl.frame_message = 0;
    if (!impl.frames.load_frame_at(at.frame_offset)) throw changed("no readable frame there");
    impl.frame = impl.frames.words();
  }
  while (impl.frame_message < at.message) {
    auto message = impl.next_message();
    if (!message || message->size() == 0) throw changed("the frame holds fewer records");
  }
  auto message = impl.next_message();
  if (!message || message->size() == 0) throw changed("the frame holds fewer records");
  try {
    capnp::FlatArrayMessageReader reader(*message, impl.frames.capnp_options());
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
  if (!impl.load_frame())
    throw TraceError("cannot read trace " + path.string() + ": no readable header: " +
                     impl.frames.recovery().reason + " at offset " +
                     std::to_string(impl.frames.recovery().dropped_from_offset));
  auto message = impl.next_message();
  if (!message || message->size() == 0)
    throw TraceError("cannot read trace " + path.string() + ": no readable header: " +
                     (message ? "the first frame is empty" : impl.frames.recovery().reason));
  try {
    capnp::FlatArrayMessageReader reader(*message, impl.frames.capnp_options());
    auto record = reader.getRoot<wire::Record>();
    if (!record.isHeader())
      throw TraceError("cannot read trace " + path.string() +
                       ": the first record is not a header (is this a retrace trace?)");
    auto header = record.getHeader();
    ListBudget budget(message->size());
    read_header(header, impl.header, budget);
  } catch (const kj::Exception& e) {
    throw TraceError("cannot read trace " + path.string() + ": corrupt header: " +
                     e.getDescription().cStr());
  } catch (const TraceError& e) {
    throw TraceError("cannot read trace " + path.string() + ": corrupt header: " + e.what());
  }
  if (impl.header.format_major > kFormatMajor)
    throw TraceError(path.string() + " uses trace format " +
                     std::to_string(impl.header.format_major) + "." +
                     std::to_string(impl.header.format_minor) + ", but this retrace reads format " +
                     std::to_string(kFormatMajor) + "." + std::to_string(kFormatMinor) +
                     " and older; upgrade retrace to read it");
  impl.frames.begin_records();
}

TraceReader::~TraceReader() = default;

const TraceHeader& TraceReader::header() const { return impl_->header; }

bool TraceReader::next(Exchange& out) {
  return impl_->next_record([&](wire::Exchange::Reader exchange, ListBudget& budget) {
    read_exchange(exchange, out, budget);
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
    throw TraceError("cannot read trace " + impl.frames.path().string() + ": no exchange was read to be read whole");
  try {
    capnp::FlatArrayMessageReader reader(*impl.last, impl.frames.capnp_options());
    ListBudget budget(impl.last->size());
    read_exchange(reader.getRoot<wire::Record>().getExchange(), out, budget);
  } catch (const kj::Exception& e) {
    throw TraceError("cannot read trace " + impl.frames.path().string() + ": a corrupt record in the frame at offset " +
                     std::to_string(impl.frames.frame_offset()) + ": " + e.getDescription().cStr());
  } catch (const TraceError& e) {
    throw TraceError("cannot read trace " + impl.frames.path().string() + ": " + e.what());
  }
}

void TraceReader::on_metrics(std::function<void(const MetricScrape&)> sink) {
  impl_->on_metrics = std::move(sink);
}

const Recovery& TraceReader::recovery() const { return impl_->frames.recovery(); }

std::string describe(const Recovery& recovery) {
  std::string text;
  if (recovery.torn)
    text = "torn tail: dropped " + std::to_string(recovery.dropped_bytes) + " bytes from offset " +
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
std::uint64_t TraceReader::file_size() const { return impl_->frames.file_size(); }
std::uint64_t TraceReader::decompressed_bytes() const { return impl_->frames.decompressed_bytes(); }
bool TraceReader::has_index() const { return impl_->frames.has_index(); }
const TraceIndex& TraceReader::index() const { return impl_->frames.index(); }
std::uint64_t TraceReader::peak_buffer_bytes() const { return impl_->frames.peak_buffer_bytes(); }

}  // namespace retrace
