// See net/arrived_body.hpp.
#include "net/arrived_body.hpp"

#include <algorithm>
#include <stdexcept>

#include "format/token_deriver.hpp"

namespace retrace::net {

std::size_t check_max_response_bytes(std::uint64_t bytes, std::string_view flag) {
  if (bytes < 1 || bytes > kMaxBlobBytes)
    throw std::invalid_argument(std::string(flag) + " " + std::to_string(bytes) + ": expected 1 to " +
                                std::to_string(kMaxBlobBytes) + " bytes (the most one trace field holds; default " +
                                std::to_string(net::kDefaultMaxResponseBytes) + ", 256 MiB)");
  return static_cast<std::size_t>(bytes);
}

Error response_limit_error(std::size_t limit) {
  return {ErrorKind::truncated, "the response passed --max-response-bytes (" + std::to_string(limit) +
                                    " bytes): kept as received up to it, the rest not read"};
}

namespace {

// Frames an event stream's decoded bytes into `events`, in slices; before each, the most the
// slice could grow `events`' capacity to (a slice completes at most one event per byte: a lone
// "\n" is one), counted with the bytes, must stay within `limit`. False (events left as they are) once
// it would not.
// What one event's position takes in an Events, measured from one.
const std::size_t kPositionBytes = [] {
  Events one, none;
  one.reserve(1);
  return one.memory() - none.memory();
}();

class EventBudget {
 public:
  EventBudget(Events& events, std::size_t limit) : events_(events), limit_(limit) {}
  bool feed(llm::SseParser& parser, std::string_view text, std::int64_t offset_ns,
            llm::ResponseDecoder* decoder) {
    constexpr std::size_t kSlice = 64u << 10;
    for (std::size_t at = 0; at < text.size(); at += kSlice) {
      auto slice = text.substr(at, kSlice);
      // Doubling as they go, the positions and the bytes end below twice what they need; where
      // that would pass the limit, they are grown to it exactly instead.
      fed_ += slice.size();
      if (events_.memory_after(slice.size(), slice.size()) > limit_ && !grow_to_limit(slice.size()))
        return false;
      llm::feed_sse(parser, slice, offset_ns, decoder, &events_);
    }
    return true;
  }

 private:
  // The events copied into storage that holds `more` events more (positions doubled as a vector
  // grows) and all of the limit left in bytes, allocated exactly (a string asked for less than
  // twice its capacity takes twice): false, events untouched, when the bytes framed so far would
  // not fit. At most a copy or two a stream, near its limit.
  bool grow_to_limit(std::size_t more) {
    const std::size_t positions = std::max(2 * events_.size(), events_.size() + more);
    const std::size_t position_bytes = positions * kPositionBytes;
    if (position_bytes >= limit_ || limit_ - position_bytes < fed_) return false;
    Events grown;
    grown.reserve(positions, limit_ - position_bytes);
    for (const Event& event : events_) grown.push_back(event);
    events_.swap(grown);
    return events_.memory() <= limit_;
  }

  Events& events_;
  std::size_t limit_;
  std::size_t fed_ = 0;  // decoded bytes framed so far (those of an event not yet complete too)
};

// An identity event stream held raw (no block compressed: up to ArrivedBody::kMostRawBytes,
// replay (b)'s 95 KB streams) whose events could not pass `limit` however its bytes split into
// events (decodes_whole: the one rule, which replay's and record's lean decode asks too): framed where
// its bytes arrived, and `events` (empty) adopt the body's buffer instead of copying it, so that
// its bytes are copied once fewer between the socket and the trace. The events, their arrival
// times and what the decoder sees are decode_arrived's copying path's, byte for byte (an event
// to a position, feed_sse's loop; the cut tail at `end_ns`, keep_partial_event's rule). False,
// nothing done, when the body is not such a stream, or when its buffer holds more than a quarter
// more than its bytes (a worker's first stream, its buffer grown by doubling: copied to its exact
// size, as before, for the events wait in the writer's queue and memory in flight must not grow;
// later ones are reserved a margin of an eighth, ArrivedBody::reserve_like); `body` is emptied
// otherwise.
bool frame_where_arrived(ArrivedBody& body, Events& events, llm::ResponseDecoder* decoder,
                         std::int64_t end_ns, std::size_t limit) {
  if (body.compressed_blocks() != 0 || body.reads() == 0 || !events.empty() ||
      body.held_bytes() > body.size() + body.size() / 4 || !decodes_whole(body, "", limit))
    return false;
  events.reserve(body.reads() + 1);  // most reads bring one event
  llm::SseParser parser;
  std::int64_t read_ns = 0;
  const llm::SseParser::Handler on_event = [&](const llm::SseEvent& event) {
    events.push_position(read_ns, event.raw.size());
    if (decoder) decoder->on_event(event.data, read_ns);
  };
  try {
    body.for_each_read([&](std::string_view text, std::int64_t offset_ns, bool) {
      read_ns = offset_ns;
      parser.feed(text, on_event);
      return true;
    });
  } catch (...) {
    events.clear();  // no positions without their bytes left behind
    throw;
  }
  if (parser.has_partial()) events.push_position(end_ns, parser.take_partial().size());
  std::string bytes = body.take_all();
  if (!events.adopt(bytes))
    throw std::logic_error("an event stream's events do not add up to its " + std::to_string(bytes.size()) +
                           " bytes as received");
  return true;
}

// An event stream as received, in the pieces it arrived in. `body` is emptied.
void store_stream_as_received(ArrivedBody& body, Response& response) {
  response.body.clear();
  response.events.release();  // cleared and freed: it may be the bomb
  response.events.reserve(body.reads(), body.size());
  std::string read;
  body.for_each_read([&](std::string_view piece, std::int64_t offset_ns, bool read_ends) {
    read.append(piece);
    if (read_ends) {
      response.events.push_back(offset_ns, read);
      read.clear();
    }
    return true;
  });
  body = {};
}

}  // namespace

DecodedBody decode_arrived(ArrivedBody& body, bool event_stream, std::string_view content_encoding,
                           Response& response, llm::ResponseDecoder* decoder, std::int64_t end_ns,
                           std::size_t decode_limit) {
  ContentDecoder content(content_encoding, decode_limit);
  bool too_large = false;
  std::string whole;  // a body that is not a stream, as received
  if (event_stream) {
    response.streamed = true;
    auto& events = response.events;
    if (!content.active() && frame_where_arrived(body, events, decoder, end_ns, decode_limit))
      return {};
    // Most reads bring one event; an identity body decodes to its own bytes.
    events.reserve(body.reads() + 1, content.active() ? 0 : std::min(body.size(), decode_limit / 2));
    llm::SseParser parser;
    EventBudget budget(events, decode_limit);
    std::string decoded;
    body.for_each_read([&](std::string_view text, std::int64_t offset_ns, bool) {
      if (!content.active()) {  // identity bodies skip this: no copy
        too_large = !budget.feed(parser, text, offset_ns, decoder);
      } else {
        // Coded bytes in small pieces: what one piece decodes to is held at once.
        constexpr std::size_t kCodedPiece = 16u << 10;
        for (std::size_t at = 0; at < text.size() && !too_large; at += kCodedPiece) {
          decoded.clear();
          content.feed(text.substr(at, kCodedPiece), decoded);
          too_large = !budget.feed(parser, decoded, offset_ns, decoder);
        }
      }
      return !too_large;
    });
    if (!too_large) llm::keep_partial_event(parser, end_ns, events);
  } else {
    whole = body.take_all();
    if (content.active()) content.feed(whole, response.body);
    else response.body = std::move(whole);
  }
  bool undecodable = content.active() && !content.finish() && !content.cut_short();
  DecodedBody result;
  result.as_received = too_large || undecodable;
  if (result.as_received && event_stream) store_stream_as_received(body, response);
  if (result.as_received && !event_stream) response.body = std::move(whole);
  // Past the limit the content decoder was not fed to the end: its note would say "cut short".
  result.note = too_large ? "the event stream decodes to more than " + std::to_string(decode_limit) +
                                " bytes with its events' bookkeeping; the stored events are the "
                                "bytes as received"
                          : content.trace_note();
  return result;
}

bool decodes_whole(const ArrivedBody& body, std::string_view content_encoding, std::size_t decode_limit) {
  if (!content_encoding.empty() && ContentDecoder(content_encoding, decode_limit).active()) return false;
  // EventBudget: at most one event a byte, positions at most doubled, plus the bytes themselves.
  return body.size() < decode_limit / (4 * (kPositionBytes + 1));
}

DecodeWants live_wants(DecodeWants wanted, bool known_dialect, bool event_stream, const ArrivedBody& body,
                       std::string_view content_encoding, std::size_t decode_limit, const Exchange& exchange,
                       const WriterOptions& writer) {
  if (wanted == DecodeWants{} || !known_dialect || !event_stream) return {};
  if (!decodes_whole(body, content_encoding, decode_limit) || !written_whole(exchange, body.size(), writer)) return {};
  return wanted;
}

}  // namespace retrace::net
