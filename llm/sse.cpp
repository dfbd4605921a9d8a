// SSE framing. Wire format (WHATWG "server-sent events", 9.2.5):
//
//   stream = [BOM] *event
//   event  = *(comment / field) blank-line
//   line   = ... ( CR LF / LF / CR )
//   comment = ":" any-text            field = name [":" [" "] value]
//
// `data` values of one event are joined with '\n'; the last `event` value wins.
#include "llm/llm.hpp"

#include <cstring>

namespace retrace::llm {

namespace {
constexpr std::string_view kBom = "\xEF\xBB\xBF";
}  // namespace

void SseParser::feed(std::string_view bytes, const Handler& on_event) {
  // Drop what earlier events consumed. Views handed out by the previous feed() die here.
  if (event_start_ > 0) {
    buffer_.erase(0, event_start_);
    scan_from_ -= event_start_;
    line_start_ -= event_start_;
    event_start_ = 0;
  }
  buffer_.append(bytes);

  if (!bom_checked_) {
    const std::size_t have = std::min(buffer_.size(), kBom.size());
    if (std::string_view(buffer_).substr(0, have) != kBom.substr(0, have)) {
      bom_checked_ = true;
    } else if (have == kBom.size()) {
      bom_checked_ = true;
      line_start_ = scan_from_ = kBom.size();  // the BOM stays in the first raw, unparsed
    } else {
      return;  // a prefix of the BOM: wait for the rest
    }
  }

  const char* base = buffer_.data();
  const std::size_t size = buffer_.size();
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
    // memchr for \n is fast on long data lines; a \r before it ends the line earlier.
    const void* lf = std::memchr(base + at, '\n', size - at);
    const std::size_t lf_at = lf ? static_cast<std::size_t>(static_cast<const char*>(lf) - base) : size;
    const void* cr = std::memchr(base + at, '\r', lf_at - at);
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
      dispatch(next, on_event);
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
  if (const auto colon = line.find(':'); colon != std::string_view::npos) {
    name = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (name == "data") {
    data_.append(value);
    data_.push_back('\n');
  } else if (name == "event") {
    event_.assign(value);
  }
  // "id" and "retry" steer reconnection, which a recorder of one response does not do.
}

void SseParser::dispatch(std::size_t raw_end, const Handler& on_event) {
  SseEvent event;
  event.raw = std::string_view(buffer_).substr(event_start_, raw_end - event_start_);
  std::string_view data = data_;
  if (!data.empty()) data.remove_suffix(1);  // the '\n' after the last data line
  event.data = data;
  event.event = event_;
  event_start_ = raw_end;
  on_event(event);
  data_.clear();
  event_.clear();
}

std::string SseParser::take_partial() {
  std::string partial = buffer_.substr(event_start_);
  buffer_.clear();
  data_.clear();
  event_.clear();
  scan_from_ = event_start_ = line_start_ = 0;
  bom_checked_ = false;
  skip_lf_ = false;
  return partial;
}

bool SseParser::has_partial() const { return buffer_.size() > event_start_; }

}  // namespace retrace::llm
