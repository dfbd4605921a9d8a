// SSE framing. Wire format (WHATWG "server-sent events", 9.2.5):
//
//   stream = [BOM] *event
//   event  = *(comment / field) blank-line
//   line   = ... ( CR LF / LF / CR )
//   comment = ":" any-text            field = name [":" [" "] value]
//
// `data` values of one event are joined with '\n'; the last `event` value wins.
//
// Copies: events that arrive whole within one feed() are framed in place, in the caller's bytes,
// and an event's single data line is handed out as a view of its line; only an event split
// across feeds is assembled in `buffer_` (line by line, so that the events after it are framed
// in place again), and only an event with several data lines joins them in `data_`.
#include "llm/llm.hpp"

#include <cstring>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace retrace::llm {

namespace {
constexpr std::string_view kBom = "\xEF\xBB\xBF";

// The first \r or \n from `p`, or `end`: 32 then 16 bytes at a time where SSE2 is (an event's
// data line is hundreds of bytes with its break at the end: one test a step for both halves).
const char* line_break(const char* p, const char* end) {
#ifdef __SSE2__
  const __m128i cr = _mm_set1_epi8('\r'), lf = _mm_set1_epi8('\n');
  const auto breaks = [&](const char* at) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(at));
    return static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(bytes, cr), _mm_cmpeq_epi8(bytes, lf))));
  };
  while (end - p >= 32) {
    const unsigned mask = breaks(p) | breaks(p + 16) << 16;
    if (mask != 0) return p + __builtin_ctz(mask);
    p += 32;
  }
  while (end - p >= 16) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const int mask = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(bytes, cr), _mm_cmpeq_epi8(bytes, lf)));
    if (mask != 0) return p + __builtin_ctz(static_cast<unsigned>(mask));
    p += 16;
  }
#endif
  while (p != end && *p != '\r' && *p != '\n') ++p;
  return p;
}
}  // namespace

// Between feeds event_start_ is 0: an unfinished event is kept from the start of buffer_ (both
// paths below leave it so), and a finished one leaves buffer_ empty.
void SseParser::feed(std::string_view bytes, const Handler& on_event) {
  if (bom_checked_ && buffer_.empty()) {
    frame_in_place(bytes, on_event);
    return;
  }
  // An event begun in an earlier feed (or the stream's first bytes, for the BOM): completed in
  // buffer_ a line at a time. A \r\n is taken whole, so that it is split only where the reads
  // split it (llm.hpp: such a split decides which event's raw the \n lands in).
  while (!bytes.empty()) {
    const void* lf = std::memchr(bytes.data(), '\n', bytes.size());
    std::size_t take = lf ? static_cast<std::size_t>(static_cast<const char*>(lf) - bytes.data()) + 1 : bytes.size();
    if (const void* cr = std::memchr(bytes.data(), '\r', take)) {
      take = static_cast<std::size_t>(static_cast<const char*>(cr) - bytes.data()) + 1;
      if (take < bytes.size() && bytes[take] == '\n') ++take;
    }
    keep_data_line();  // the append may move buffer_
    buffer_.append(bytes.substr(0, take));
    bytes.remove_prefix(take);
    if (!bom_checked_) {
      const std::size_t have = std::min(buffer_.size(), kBom.size());
      if (std::string_view(buffer_).substr(0, have) != kBom.substr(0, have)) {
        bom_checked_ = true;
      } else if (have == kBom.size()) {
        bom_checked_ = true;
        line_start_ = scan_from_ = kBom.size();  // the BOM stays in the first raw, unparsed
      } else {
        continue;  // a prefix of the BOM: wait for the rest
      }
    }
    scan(buffer_.data(), buffer_.size(), on_event);
    if (event_start_ == buffer_.size()) {  // the event ended with this line: the rest in place
      keep_data_line();
      buffer_.clear();
      scan_from_ = event_start_ = line_start_ = 0;
      if (!bytes.empty()) frame_in_place(bytes, on_event);
      return;
    }
  }
}

void SseParser::frame_in_place(std::string_view bytes, const Handler& on_event) {
  scan(bytes.data(), bytes.size(), on_event);
  if (event_start_ < bytes.size()) {  // an unterminated event: kept for the next feed
    keep_data_line();
    buffer_.assign(bytes.substr(event_start_));
    scan_from_ -= event_start_;
    line_start_ -= event_start_;
  } else {
    scan_from_ = line_start_ = 0;
  }
  event_start_ = 0;
}

// Frames the bytes of `base` from scan_from_ on; event_start_ and line_start_ are offsets in it.
void SseParser::scan(const char* base, std::size_t size, const Handler& on_event) {
  std::size_t at = scan_from_;
  while (at < size) {
    if (skip_lf_) {
      skip_lf_ = false;
      if (base[at] == '\n') {
        // The \n of a \r\n split across feeds: part of the previous line end.
        line_start_ = ++at;
        continue;
      }
    }
    // The first \r or \n, in one pass over the line.
    const char* const stop = line_break(base + at, base + size);
    const void* lf = stop != base + size && *stop == '\n' ? stop : nullptr;
    const void* cr = stop != base + size && *stop == '\r' ? stop : nullptr;
    const std::size_t lf_at = lf ? static_cast<std::size_t>(stop - base) : size;
    std::size_t line_end;
    std::size_t next;
    if (cr) {
      line_end = static_cast<std::size_t>(static_cast<const char*>(cr) - base);
      if (line_end + 1 < size) {
        next = line_end + (base[line_end + 1] == '\n' ? 2 : 1);
      } else {
        next = line_end + 1;
        skip_lf_ = true;
      }
    } else if (lf) {
      line_end = lf_at;
      next = lf_at + 1;
    } else {
      at = size;
      break;
    }
    const std::string_view line(base + line_start_, line_end - line_start_);
    if (line.empty()) {
      at = next;
      scan_from_ = line_start_ = next;
      dispatch(std::string_view(base + event_start_, next - event_start_), on_event);
      event_start_ = next;
      continue;
    }
    process_line(line);
    at = line_start_ = next;
  }
  scan_from_ = at;
}

void SseParser::process_line(std::string_view line) {
  if (line.front() == ':') return;  // comment
  std::string_view name = line;
  std::string_view value;
  // Nearly every line is a data line: its colon is at 4 ("data" has none), found without a search.
  const bool data_line = line.size() >= 5 && std::memcmp(line.data(), "data:", 5) == 0;
  if (const auto colon = data_line ? 4 : line.find(':'); colon != std::string_view::npos) {
    name = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (name == "data") {
    if (data_.empty() && !data_in_place_) {
      first_data_ = value;
      data_in_place_ = true;
    } else {
      keep_data_line();
      data_.append(value);
      data_.push_back('\n');
    }
  } else if (name == "event") {
    event_.assign(value);
  }
  // "id" and "retry" steer reconnection, which a recorder of one response does not do.
}

void SseParser::keep_data_line() {
  if (!data_in_place_) return;
  data_.assign(first_data_);
  data_.push_back('\n');
  data_in_place_ = false;
}

void SseParser::dispatch(std::string_view raw, const Handler& on_event) {
  SseEvent event;
  event.raw = raw;
  if (data_in_place_) {
    event.data = first_data_;
  } else {
    std::string_view data = data_;
    if (!data.empty()) data.remove_suffix(1);  // the '\n' after the last data line
    event.data = data;
  }
  event.event = event_;
  on_event(event);
  data_.clear();
  data_in_place_ = false;
  event_.clear();
}

std::string SseParser::take_partial() {
  std::string partial = buffer_.substr(event_start_);
  buffer_.clear();
  data_.clear();
  data_in_place_ = false;
  event_.clear();
  scan_from_ = event_start_ = line_start_ = 0;
  bom_checked_ = false;
  skip_lf_ = false;
  return partial;
}

bool SseParser::has_partial() const { return buffer_.size() > event_start_; }

}  // namespace retrace::llm
