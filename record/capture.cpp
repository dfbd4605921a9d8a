// The trace thread's half of recording: turning what a proxy worker captured into an Exchange.
#include <fnmatch.h>

#include <algorithm>

#include <boost/json.hpp>

#include "llm/llm.hpp"
#include "net/content_coding.hpp"
#include "record/record.hpp"

namespace retrace::record {

bool path_selected(std::string_view target, const std::vector<std::string>& include,
                   const std::vector<std::string>& exclude) {
  std::string path(target.substr(0, target.find('?')));
  auto matches = [&](const std::string& pattern) {
    return ::fnmatch(pattern.c_str(), path.c_str(), 0) == 0;
  };
  if (!include.empty() && std::none_of(include.begin(), include.end(), matches)) return false;
  return std::none_of(exclude.begin(), exclude.end(), matches);
}

void finish_exchange(CapturedExchange&& captured, const Redactor& redactor, std::uint64_t id,
                     Exchange& out, std::size_t decode_limit) {
  out = std::move(captured.exchange);
  out.id = id;
  redactor.apply(out.request);
  redactor.apply(out.response.headers);
  // The key is the stored request's, so a replay of this trace (which sends what is stored)
  // aligns with it.
  out.key = request_key(out.request.method, out.request.target, out.request.body);

  auto dialect = llm::detect_dialect(out.request.target, out.request.body);
  std::optional<llm::ResponseDecoder> decoder;
  if (dialect != llm::Dialect::unknown && out.response.status != 0) decoder.emplace(dialect);

  // The trace keeps the body decoded (docs/DESIGN.md, the trace format), piece by piece as it
  // arrived: each event keeps the arrival time of the coded bytes that completed it.
  const std::string& body = captured.body;
  net::ContentDecoder content(captured.content_encoding, decode_limit);
  std::string decoded;
  auto plain = [&](std::string_view coded) -> std::string_view {
    if (!content.active()) return coded;  // identity: no copy
    decoded.clear();
    content.feed(coded, decoded);
    return decoded;
  };
  auto* tokens = decoder ? &*decoder : nullptr;
  bool events_too_large = false;
  if (captured.event_stream) {
    out.response.streamed = true;
    auto& events = out.response.events;
    events.reserve(captured.chunks.size() + 1);  // most reads bring one event
    llm::SseParser parser;
    std::size_t begin = 0;
    // An event costs its bytes and an Event's bookkeeping: both count against the decode limit,
    // fed in slices so that one piece decoding to millions of tiny events ("\n\n" x 10^8) stops
    // at the limit, not gigabytes past it. Past it, the stream is stored as received, as an
    // undecodable one is.
    std::size_t event_cost = 0;
    for (const auto& chunk : captured.chunks) {
      std::string_view bytes(body.data() + begin, chunk.end - begin);
      begin = chunk.end;
      auto text = plain(bytes);
      constexpr std::size_t kSlice = 64u << 10;
      for (std::size_t at = 0; at < text.size() && !events_too_large; at += kSlice) {
        auto before = events.size();
        auto slice = text.substr(at, kSlice);
        llm::feed_sse(parser, slice, chunk.offset_ns, tokens, &events);
        event_cost += slice.size() + (events.size() - before) * sizeof(Event);
        events_too_large = event_cost > decode_limit;
      }
      if (events_too_large) break;
    }
    // A stream cut mid-event: keep its bytes raw so that the events still add up to the body.
    if (!events_too_large)
      llm::keep_partial_event(parser, captured.chunks.empty() ? 0 : captured.chunks.back().offset_ns,
                              events);
  } else if (content.active()) {
    content.feed(body, out.response.body);  // straight in: a large body is not held twice
  } else {
    out.response.body = body;
  }
  content.finish();
  if (events_too_large || (content.failed() && !content.cut_short())) {
    // Not decodable: the bytes as received, in the pieces they arrived in. Tokens already
    // decoded from the part that did decode stay.
    out.response.body.clear();
    std::vector<Event>().swap(out.response.events);  // cleared and freed: it may be the bomb
    if (!captured.event_stream) {
      out.response.body = body;
    } else {
      std::size_t begin = 0;
      for (const auto& chunk : captured.chunks) {
        out.response.events.push_back({chunk.offset_ns, body.substr(begin, chunk.end - begin)});
        begin = chunk.end;
      }
    }
  } else if (!captured.event_stream && tokens && !out.response.body.empty()) {
    tokens->on_body(out.response.body,
                    captured.chunks.empty() ? out.end_ns : captured.chunks.back().offset_ns);
  }
  // The proxy's own note (a cut stream) comes first, then the content coding's, then the
  // token decoder's.
  auto join = [](std::string first, const std::string& then) {
    return first.empty() ? then : then.empty() ? first : first + "; " + then;
  };
  auto note = join(std::move(out.decode_note), content.trace_note());
  if (events_too_large)
    note = join(std::move(note), "the event stream decodes to more than " +
                                     std::to_string(decode_limit) +
                                     " bytes with its events' bookkeeping; the stored events are "
                                     "the bytes as received");
  out.decode_note.clear();
  if (decoder) decoder->finish(out);
  out.decode_note = join(std::move(note), out.decode_note);
}

std::string settings_json(const RecordOptions& options) {
  boost::json::object settings;
  settings["command"] = "record";
  settings["upstream"] = options.upstream.str();
  settings["listen"] = options.listen.host + ":" + std::to_string(options.listen.port);
  settings["session_header"] = options.session_header;
  boost::json::array redacted;
  if (!options.keep_secrets) {
    for (auto name : secret_header_names()) redacted.emplace_back(name);
    for (const auto& name : options.redact_headers) redacted.emplace_back(name);
  }
  settings["redacted_headers"] = std::move(redacted);
  settings["keep_secrets"] = options.keep_secrets;
  boost::json::array include, exclude;
  for (const auto& glob : options.include_paths) include.emplace_back(glob);
  for (const auto& glob : options.exclude_paths) exclude.emplace_back(glob);
  settings["include_paths"] = std::move(include);
  settings["exclude_paths"] = std::move(exclude);
  settings["max_body"] = options.max_body;
  settings["flush_every"] = options.writer.flush_every;
  settings["flush_ms"] = options.writer.flush_ms;
  settings["upstream_timeout_ms"] = options.upstream_timeout.count();
  settings["insecure"] = options.tls.insecure;
  settings["ca_file"] = options.tls.ca_file;
  return boost::json::serialize(settings);
}

}  // namespace retrace::record
