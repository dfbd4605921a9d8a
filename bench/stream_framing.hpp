// One HTTP/1.1 response to a streamed request, framed as its bytes arrive and kept nothing of: the
// least a client must do to know where each response and each SSE event ends
// (bench/stream_floor_bench.cpp, issue 44's roofline of replay's streamed client).
//
//   head      "HTTP/1.1 200 ..." then header lines up to the blank line; the status and the body's
//             framing are read from it: `Transfer-Encoding: chunked`, else `Content-Length: N`
//             (a response with neither is refused: this reader never reads to a close).
//   chunked   "HEX[;extension]\r\n" DATA "\r\n" ... "0\r\n" trailer lines "\r\n"
//   body      DATA is text/event-stream: lines ending in "\n" (a "\r" before it dropped); a
//             "data:" line belongs to the event the next blank line ends. An event whose data is
//             "[DONE]" is counted as `done`; any other is an event, and a token when its data holds
//             a non-empty `"text":"` or `"content":"` string (compact JSON, as vLLM-style servers
//             and `retrace serve` write it) -- one token an event, as those servers send.
//
// The bytes may be split anywhere. Only what straddles a split is copied (a head, a chunk-size
// line, an SSE line), into two buffers the framer reuses; every such copy is bounded
// (kMaxCarry), as is a chunk-size line's digits.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "base/ascii.hpp"

namespace retrace::bench {

struct StreamCounts {
  std::uint64_t events = 0;  // data events but [DONE]
  std::uint64_t tokens = 0;  // events that carried text
  std::uint64_t done = 0;    // [DONE] events
};

class ResponseFramer {
 public:
  static constexpr std::size_t kMaxCarry = 1 << 20;  // a head, or one SSE line

  // Frames the next size bytes of data; returns how many belong to this response (fewer than
  // size only when it completed: the rest is the next response's). After complete() or failed()
  // it consumes nothing until reset().
  std::size_t feed(const char* data, std::size_t size) {
    std::size_t used = 0;
    while (used < size && state_ != State::complete && state_ != State::failed) {
      used += step(data + used, size - used);
    }
    return used;
  }
  bool complete() const { return state_ == State::complete; }
  bool failed() const { return state_ == State::failed; }
  const std::string& error() const { return error_; }
  int status() const { return status_; }
  const StreamCounts& counts() const { return counts_; }
  // For the next response on the same connection.
  void reset() {
    state_ = State::head;
    line_.clear();
    carry_.clear();
    counts_ = {};
    status_ = 0;
    left_ = 0;
    error_.clear();
    event_ = {};
  }

 private:
  enum class State { head, chunk_size, chunk_data, chunk_data_end, trailers, length_body, complete, failed };
  struct Event {
    bool data = false, done = false, token = false;
  };

  std::size_t fail(std::string why) {
    state_ = State::failed;
    error_ = std::move(why);
    return 0;
  }

  // One step on data[0..size): consumes at least one byte unless the state becomes final.
  std::size_t step(const char* data, std::size_t size) {
    switch (state_) {
      case State::head: return head(data, size);
      case State::chunk_size:
      case State::trailers: return line_state(data, size);
      case State::chunk_data:
      case State::length_body: {
        std::size_t n = left_ < size ? static_cast<std::size_t>(left_) : size;
        if (!sse(data, n)) return 0;
        left_ -= n;
        if (left_ == 0) {
          if (state_ == State::length_body) {
            end_of_body();
          } else {
            state_ = State::chunk_data_end;
            left_ = 2;  // its "\r\n"
          }
        }
        return n;
      }
      case State::chunk_data_end: {
        const char want = left_ == 2 ? '\r' : '\n';
        if (data[0] != want) return fail("a chunk's data does not end in CRLF");
        if (--left_ == 0) state_ = State::chunk_size;
        return 1;
      }
      default: return 0;
    }
  }

  std::size_t head(const char* data, std::size_t size) {
    const std::size_t before = line_.size();
    const std::size_t take = size < kMaxCarry - before + 4 ? size : kMaxCarry - before + 4;
    line_.append(data, take);
    std::size_t from = before < 3 ? 0 : before - 3;
    std::size_t end = line_.find("\r\n\r\n", from);
    if (end == std::string::npos) {
      if (line_.size() > kMaxCarry) return fail("a response head longer than 1 MiB");
      return take;
    }
    const std::size_t used = end + 4 - before;
    line_.resize(end + 2);  // every header line ends in "\r\n"
    if (!parse_head(line_)) return 0;
    line_.clear();
    return used;
  }

  bool parse_head(std::string_view head) {
    if (head.size() < 12 || head.substr(0, 7) != "HTTP/1.") return fail("not an HTTP/1.x response"), false;
    for (std::size_t i = 9; i < 12; ++i) {
      if (head[i] < '0' || head[i] > '9') return fail("a status line without a status"), false;
    }
    status_ = (head[9] - '0') * 100 + (head[10] - '0') * 10 + (head[11] - '0');
    bool chunked = false, sized = false;
    std::uint64_t length = 0;
    std::size_t at = head.find("\r\n") + 2;
    while (at < head.size()) {
      std::size_t end = head.find("\r\n", at);
      std::string_view line = head.substr(at, end - at);
      at = end + 2;
      std::size_t colon = line.find(':');
      if (colon == std::string_view::npos) continue;
      std::string_view name = line.substr(0, colon), value = trim(line.substr(colon + 1));
      if (ascii_iequals(name, "transfer-encoding")) {
        chunked = value.size() >= 7 && ascii_iequals(value.substr(value.size() - 7), "chunked");
      } else if (ascii_iequals(name, "content-length")) {
        sized = true;
        length = 0;
        for (char c : value) {
          if (c < '0' || c > '9' || length > (std::uint64_t(1) << 50)) return fail("a bad Content-Length"), false;
          length = length * 10 + static_cast<std::uint64_t>(c - '0');
        }
      }
    }
    if (chunked) {
      state_ = State::chunk_size;
    } else if (sized) {
      left_ = length;
      state_ = State::length_body;
      if (length == 0) end_of_body();
    } else {
      return fail("a response neither chunked nor sized (this reader does not read to a close)"), false;
    }
    return true;
  }

  // A chunk-size line or a trailer line: whole lines, carried across splits.
  std::size_t line_state(const char* data, std::size_t size) {
    const char* newline = static_cast<const char*>(std::memchr(data, '\n', size));
    const std::size_t take = newline ? static_cast<std::size_t>(newline - data) + 1 : size;
    if (line_.size() + take > 4096) return fail("a chunk-size or trailer line longer than 4 KiB");
    std::string_view line;
    if (line_.empty() && newline) {
      line = std::string_view(data, take);
    } else {
      line_.append(data, take);
      if (!newline) return take;
      line = line_;
    }
    line.remove_suffix(1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (state_ == State::trailers) {
      if (line.empty()) end_of_body();
    } else {
      std::uint64_t chunk = 0;
      std::size_t digits = 0;
      for (char c : line) {
        int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (v < 0) break;
        if (++digits > 15) return fail("a chunk size of more than 15 hex digits");
        chunk = chunk * 16 + static_cast<std::uint64_t>(v);
      }
      if (digits == 0 || (digits < line.size() && line[digits] != ';' && line[digits] != ' ')) {
        return fail("a bad chunk-size line: '" + std::string(line.substr(0, 40)) + "'");
      }
      if (chunk == 0) {
        state_ = State::trailers;
      } else {
        left_ = chunk;
        state_ = State::chunk_data;
      }
    }
    line_.clear();
    return take;
  }

  // Body bytes: SSE lines, the straddling one carried.
  bool sse(const char* data, std::size_t size) {
    while (size > 0) {
      const char* newline = static_cast<const char*>(std::memchr(data, '\n', size));
      if (!newline) {
        if (carry_.size() + size > kMaxCarry) return fail("an SSE line longer than 1 MiB"), false;
        carry_.append(data, size);
        return true;
      }
      const std::size_t length = static_cast<std::size_t>(newline - data);
      if (carry_.empty()) {
        line(std::string_view(data, length));
      } else {
        if (carry_.size() + length > kMaxCarry) return fail("an SSE line longer than 1 MiB"), false;
        carry_.append(data, length);
        line(carry_);
        carry_.clear();
      }
      data = newline + 1;
      size -= length + 1;
    }
    return true;
  }

  void line(std::string_view text) {
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    if (text.empty()) {  // the event ends
      if (event_.data) {
        if (event_.done) {
          ++counts_.done;
        } else {
          ++counts_.events;
          counts_.tokens += event_.token ? 1 : 0;
        }
      }
      event_ = {};
      return;
    }
    if (text.size() < 5 || std::memcmp(text.data(), "data:", 5) != 0) return;
    text.remove_prefix(5);
    if (!text.empty() && text.front() == ' ') text.remove_prefix(1);
    event_.data = true;
    if (text == "[DONE]") {
      event_.done = true;
      return;
    }
    event_.token = event_.token || nonempty_string(text, "\"text\":\"") || nonempty_string(text, "\"content\":\"");
  }

  static bool nonempty_string(std::string_view text, std::string_view key) {
    const void* at = ::memmem(text.data(), text.size(), key.data(), key.size());
    if (!at) return false;
    const char* value = static_cast<const char*>(at) + key.size();
    return value < text.data() + text.size() && *value != '"';
  }

  void end_of_body() {
    state_ = State::complete;
    carry_.clear();  // an SSE line the body left unended is dropped, as SSE drops it
  }

  State state_ = State::head;
  std::string line_;   // a head, a chunk-size line or a trailer line that straddles a split
  std::string carry_;  // an SSE line that straddles a split (it may span chunks)
  StreamCounts counts_;
  Event event_;
  int status_ = 0;
  std::uint64_t left_ = 0;  // bytes of chunk or body data, or of a chunk's CRLF, still to come
  std::string error_;
};

}  // namespace retrace::bench
