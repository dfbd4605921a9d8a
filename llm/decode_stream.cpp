// decode_exchange: decodes a stored response (its raw events or body) from scratch.
#include <algorithm>

#include "llm/llm.hpp"

namespace retrace::llm {

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
  exchange.decode_note.clear();
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
  auto decode_sse = [&](auto&& for_each_chunk) {
    SseParser parser;
    for_each_chunk([&](std::string_view bytes, std::int64_t offset_ns) {
      parser.feed(bytes, [&](const SseEvent& event) {
        ++events;
        decoder.on_event(event.data, offset_ns);
      });
    });
    partial = parser.take_partial();
  };
  const std::int64_t body_offset = exchange.end_ns >= 0 ? exchange.end_ns : std::max<std::int64_t>(exchange.first_byte_ns, 0);
  if (response.streamed) {
    decode_sse([&](auto&& feed) {
      for (const Event& event : response.events) feed(event.data, event.offset_ns);
      if (!response.body.empty()) feed(response.body, body_offset);
    });
  } else if (looks_like_sse(response.body)) {
    decode_sse([&](auto&& feed) { feed(response.body, body_offset); });
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
