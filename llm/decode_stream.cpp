// SSE bytes into a decoder: the loop shared by everyone who decodes a stream as it arrives, and
// decode_exchange, which decodes a stored response from scratch.
#include <algorithm>

#include "llm/llm.hpp"

namespace retrace::llm {

std::size_t feed_sse(SseParser& parser, std::string_view bytes, std::int64_t offset_ns, ResponseDecoder* decoder,
                     Events* events) {
  // The handler captures one pointer, so that std::function holds it in place: a lambda capturing
  // these four by reference did not fit, and cost a malloc and a free a read (one an event).
  struct Sink {
    std::size_t completed;
    std::int64_t offset_ns;
    ResponseDecoder* decoder;
    Events* events;
  } sink{0, offset_ns, decoder, events};
  parser.feed(bytes, [&sink](const SseEvent& event) {
    ++sink.completed;
    if (sink.events) sink.events->push_back(sink.offset_ns, event.raw);
    if (sink.decoder) sink.decoder->on_event(event.data, sink.offset_ns);
  });
  return sink.completed;
}

void keep_partial_event(SseParser& parser, std::int64_t offset_ns, Events& events) {
  if (parser.has_partial()) events.push_back(offset_ns, parser.take_partial());
}

namespace {

bool looks_like_sse(std::string_view body) {
  if (body.substr(0, 3) == "\xEF\xBB\xBF") body.remove_prefix(3);
  const auto start = body.find_first_not_of("\r\n");
  if (start == std::string_view::npos) return false;
  body.remove_prefix(start);
  return body.substr(0, 5) == "data:" || body.substr(0, 6) == "event:" || body.substr(0, 1) == ":";
}

}  // namespace

void decode_exchange(Exchange& exchange) {
  exchange.choices.clear();
  exchange.usage = Usage{};
  exchange.server = ServerSaid{};
  exchange.decode_note.clear();
  // The error kinds the decoder itself finds (ResponseDecoder::finish) are found again from the
  // bytes: a decode of changed bytes must not keep the last decode's verdict.
  if (exchange.error.kind == ErrorKind::server_error || exchange.error.kind == ErrorKind::truncated)
    exchange.error = {};
  const Dialect dialect = detect_dialect(exchange.request.target, exchange.request.body);
  exchange.dialect = std::string(to_string(dialect));
  const Response& response = exchange.response;
  if (response.status == 0) {
    exchange.decode_note = "no response to decode";
    return;
  }
  if (response.status >= 400) {
    std::string body = response.body;
    if (body.empty()) {
      for (const Event& event : response.events) body += event.data;
    }
    exchange.decode_note = "HTTP " + std::to_string(response.status) + ": no tokens";
    if (!body.empty()) {
      std::string excerpt = body.substr(0, 200);
      for (char& c : excerpt) {
        if (static_cast<unsigned char>(c) < 0x20) c = ' ';
      }
      exchange.decode_note += " (" + excerpt + ")";
    }
    return;
  }

  ResponseDecoder decoder(dialect);
  std::string partial;
  std::size_t events = 0;
  const std::int64_t body_offset =
      exchange.end_ns >= 0 ? exchange.end_ns : std::max<std::int64_t>(exchange.first_byte_ns, 0);
  if (response.streamed || looks_like_sse(response.body)) {
    SseParser parser;
    if (response.streamed) {
      for (const Event& event : response.events) {
        events += feed_sse(parser, event.data, event.offset_ns, &decoder, nullptr);
      }
    }
    if (!response.body.empty()) events += feed_sse(parser, response.body, body_offset, &decoder, nullptr);
    partial = parser.take_partial();
  } else {
    decoder.on_body(response.body, body_offset);
  }
  if (events == 0 && !partial.empty() && !looks_like_sse(partial)) {
    // Marked streamed but not SSE framed (a JSON body sent in chunks): decode it as a body.
    decoder.on_body(partial, body_offset);
    partial.clear();
  }
  decoder.finish(exchange);
  if (!partial.empty()) {
    std::string note = "stream cut: " + std::to_string(partial.size()) + " bytes of an unterminated event dropped";
    exchange.decode_note = exchange.decode_note.empty() ? note : note + "; " + exchange.decode_note;
  }
}

}  // namespace retrace::llm
