#include "record/trace_output.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <system_error>

#include "base/private_file.hpp"
#include "base/splitmix.hpp"
#include "format/segments.hpp"

namespace retrace::record {

namespace fs = std::filesystem;

namespace {

std::int64_t unix_ns(Clock::wall_time_point at) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch()).count();
}

std::string new_set_id(const Clock& clock) {
  std::uint64_t state = static_cast<std::uint64_t>(unix_ns(clock.wall())) ^
                        (static_cast<std::uint64_t>(::getpid()) << 32) ^
                        static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  char text[24];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(splitmix64_next(state)));
  return text;
}

const std::string* label_of(const TraceHeader& header, std::string_view key) {
  for (const auto& label : header.labels)
    if (label.key == key) return &label.value;
  return nullptr;
}

}  // namespace

TraceOutput::TraceOutput(const fs::path& out, const TraceHeader& header, WriterOptions writer,
                         SegmentOptions segments, const Clock& clock,
                         std::function<void(const std::string&)> note)
    : out_(out),
      header_(header),
      writer_options_(writer),
      options_(segments),
      clock_(clock),
      note_(std::move(note)) {
  if (!options_.segmented) {
    writer_ = std::make_unique<TraceWriter>(out_, header_, writer_options_);
    counters.segments_opened = 1;
    counters.bytes_written = writer_->bytes_written();
    counters.last_flush_unix_ns = unix_ns(clock_.wall());  // the header, written at once
    return;
  }
  try {
    create_private_directories(out_);
  } catch (const std::exception& e) {
    throw TraceError("cannot create the segment directory " + out_.string() + ": " + e.what() +
                     " (choose another --out)");
  }
  auto listing = list_segments(out_);
  if (listing.other_entries > 0)
    throw TraceError(out_.string() + " holds " + std::to_string(listing.other_entries) +
                     (listing.other_entries == 1 ? " entry that is not a segment"
                                                   : " entries that are not segments") +
                     " (e.g. '" + listing.first_other +
                     "'): record writes numbered segments there and deletes the oldest under "
                     "--max-disk/--keep-for, so it takes an empty directory or one it wrote; "
                     "choose another --out");
  // A set found is continued: its segments are the oldest closed ones, aged by their mtime.
  for (auto number : listing.numbers) {
    auto path = out_ / segment_file_name(number);
    struct stat status {};
    if (::stat(path.c_str(), &status) != 0) continue;
    auto modified = Clock::wall_time_point{std::chrono::duration_cast<Clock::wall_time_point::duration>(
        std::chrono::seconds(status.st_mtim.tv_sec) + std::chrono::nanoseconds(status.st_mtim.tv_nsec))};
    auto age = std::max(Clock::wall_time_point::duration::zero(), clock_.wall() - modified);
    closed_.push_back({number, static_cast<std::uint64_t>(status.st_size),
                       clock_.now() - std::chrono::duration_cast<Clock::time_point::duration>(age)});
    closed_bytes_ += static_cast<std::uint64_t>(status.st_size);
  }
  if (!listing.numbers.empty()) {
    number_ = listing.numbers.back();
    try {
      TraceReader last(out_ / segment_file_name(number_));
      if (const auto* id = label_of(last.header(), kSegmentSetLabel)) set_id_ = *id;
    } catch (const TraceError&) {
      // A last segment without a readable header (a crash as it opened): a new set id.
    }
    note_("continuing the segment set in " + out_.string() + " after " + segment_file_name(number_) +
          " (" + std::to_string(listing.numbers.size()) + " segment(s) found)");
  }
  if (set_id_.empty()) set_id_ = new_set_id(clock_);
  open_next();
  apply_retention();
}

TraceOutput::~TraceOutput() {
  try {
    close();
  } catch (...) {
    // close() reports; the destructor swallows, as TraceWriter's does.
  }
}

void TraceOutput::open_next() {
  ++number_;
  TraceHeader header = header_;
  header.created_unix_ns = unix_ns(clock_.wall());
  header.labels.push_back({std::string(kSegmentLabel), std::to_string(number_)});
  header.labels.push_back({std::string(kSegmentSetLabel), set_id_});
  writer_ = std::make_unique<TraceWriter>(out_ / segment_file_name(number_), header, writer_options_);
  opened_at_ = clock_.now();
  ++counters.segments_opened;
  counters.bytes_written = closed_written_bytes_ + writer_->bytes_written();
  counters.last_flush_unix_ns = unix_ns(clock_.wall());  // the header, written at once
}

void TraceOutput::close_current() {
  if (!writer_) return;
  auto writer = std::move(writer_);
  try {
    writer->close();
  } catch (...) {
    closed_flushed_ += writer->exchanges_flushed();
    closed_written_ += writer->exchanges_written();
    closed_written_bytes_ += writer->bytes_written();
    counters.bytes_written = closed_written_bytes_;
    throw;
  }
  if (index_note_.empty()) index_note_ = writer->index_note();
  closed_flushed_ += writer->exchanges_flushed();
  closed_written_ += writer->exchanges_written();
  closed_written_bytes_ += writer->bytes_written();
  counters.bytes_written = closed_written_bytes_;
  counters.last_flush_unix_ns = unix_ns(clock_.wall());
  if (options_.segmented) {
    closed_.push_back({number_, writer->bytes_written(), clock_.now()});
    closed_bytes_ += writer->bytes_written();
  }
}

void TraceOutput::rotate(const std::string& why) {
  rotation_asked_ = false;
  std::uint64_t exchanges = writer_ ? writer_->exchanges_written() : 0;
  close_current();
  note_("closed segment " + segment_file_name(number_) + " (" + why + "; " +
        std::to_string(exchanges) + " exchange(s), " + std::to_string(closed_.back().bytes) +
        " bytes); opening " + segment_file_name(number_ + 1));
  open_next();
  apply_retention();
}

void TraceOutput::noted_flush() {
  counters.bytes_written = closed_written_bytes_ + writer_->bytes_written();
  counters.last_flush_unix_ns = unix_ns(clock_.wall());
}

void TraceOutput::write(const Exchange& exchange) {
  if (!writer_) throw TraceError("the trace " + out_.string() + " is closed (an earlier write failed)");
  if (options_.segmented) {
    bool timed = options_.rotate_every.count() > 0 && writer_->exchanges_written() > 0 &&
                 clock_.now() - opened_at_ >= options_.rotate_every;
    if (rotation_asked_) rotate("SIGHUP");
    else if (timed) rotate("--rotate-every");
  }
  std::uint64_t flushed = writer_->exchanges_flushed();
  writer_->write(exchange);
  if (writer_->exchanges_flushed() != flushed) noted_flush();
  if (!options_.segmented) return;
  if (options_.rotate_size > 0 && writer_->size_estimate() >= options_.rotate_size)
    rotate("--rotate-size");
  else if (options_.max_disk > 0)
    apply_retention();
}

void TraceOutput::write(const MetricScrape& scrape) {
  if (!writer_) throw TraceError("the trace " + out_.string() + " is closed (an earlier write failed)");
  writer_->write(scrape);
}

void TraceOutput::flush() {
  if (!writer_) return;
  writer_->flush();
  noted_flush();
}

void TraceOutput::tick() {
  if (!writer_) return;
  if (writer_->flush_if_due()) noted_flush();
  if (!options_.segmented) return;
  if (rotation_asked_) return rotate("SIGHUP");
  if (options_.rotate_every.count() > 0 && clock_.now() - opened_at_ >= options_.rotate_every) {
    if (writer_->exchanges_written() > 0) return rotate("--rotate-every");
    opened_at_ = clock_.now();  // an empty segment stays open: its window starts again
  }
  apply_retention();
}

std::optional<std::chrono::nanoseconds> TraceOutput::until_due() const {
  std::optional<std::chrono::nanoseconds> due;
  // Nothing timed, no clock read: a test's ManualClock that steps on each read sees only the
  // reads of what it times.
  if (!options_.segmented || !writer_ ||
      (options_.rotate_every.count() == 0 && options_.keep_for.count() == 0))
    return due;
  auto now = clock_.now();
  auto consider = [&](Clock::time_point at) {
    auto wait = std::max(std::chrono::nanoseconds::zero(),
                         std::chrono::duration_cast<std::chrono::nanoseconds>(at - now));
    if (!due || wait < *due) due = wait;
  };
  if (options_.rotate_every.count() > 0) consider(opened_at_ + options_.rotate_every);
  if (options_.keep_for.count() > 0 && !closed_.empty())
    consider(closed_.front().closed_at + options_.keep_for);
  return due;
}

void TraceOutput::apply_retention() {
  auto now = clock_.now();
  for (;;) {
    if (closed_.empty()) return;
    std::uint64_t open_bytes = writer_ ? writer_->size_estimate() : 0;
    std::string why;
    if (options_.max_disk > 0 && closed_bytes_ + open_bytes > options_.max_disk)
      why = "--max-disk " + std::to_string(options_.max_disk) + ": the set held " +
            std::to_string(closed_bytes_ + open_bytes) + " bytes";
    else if (options_.keep_for.count() > 0 && now - closed_.front().closed_at >= options_.keep_for)
      why = "--keep-for: closed " +
            std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now - closed_.front().closed_at).count()) +
            " s ago";
    else
      return;
    Closed oldest = closed_.front();
    closed_.pop_front();
    closed_bytes_ -= oldest.bytes;
    auto name = segment_file_name(oldest.number);
    std::error_code error;
    if (!fs::remove(out_ / name, error) && error) {
      note_("could not delete segment " + name + " (" + why + "): " + error.message() +
            "; it is left in place and no longer counted");
      continue;
    }
    ++counters.segments_deleted;
    counters.bytes_deleted += oldest.bytes;
    note_("deleted segment " + name + " (" + std::to_string(oldest.bytes) + " bytes; " + why + ")");
  }
}

void TraceOutput::close() {
  if (!writer_) return;
  close_current();
}

std::uint64_t TraceOutput::exchanges_flushed() const {
  return closed_flushed_ + (writer_ ? writer_->exchanges_flushed() : 0);
}

std::uint64_t TraceOutput::exchanges_written() const {
  return closed_written_ + (writer_ ? writer_->exchanges_written() : 0);
}

std::uint64_t TraceOutput::bytes() const {
  return closed_written_bytes_ + (writer_ ? writer_->bytes_written() : 0);
}

}  // namespace retrace::record
