// The trace thread's half of recording: turning what a proxy worker captured into an Exchange.
#include <fnmatch.h>

#include <algorithm>

#include <boost/json.hpp>

#include "llm/llm.hpp"
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
                     Exchange& out) {
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

  const std::string& body = captured.body;
  if (captured.event_stream) {
    out.response.streamed = true;
    auto& events = out.response.events;
    llm::SseParser parser;
    std::size_t begin = 0;
    for (const auto& chunk : captured.chunks) {
      std::string_view bytes(body.data() + begin, chunk.end - begin);
      begin = chunk.end;
      parser.feed(bytes, [&](const llm::SseEvent& event) {
        events.push_back(Event{chunk.offset_ns, std::string(event.raw)});
        if (decoder) decoder->on_event(event.data, chunk.offset_ns);
      });
    }
    // A stream cut mid-event: keep its bytes raw so that the events still add up to the body.
    if (parser.has_partial()) {
      auto offset = captured.chunks.empty() ? 0 : captured.chunks.back().offset_ns;
      events.push_back(Event{offset, parser.take_partial()});
    }
  } else {
    out.response.body = body;
    if (decoder && !body.empty())
      decoder->on_body(body, captured.chunks.empty() ? out.end_ns : captured.chunks.back().offset_ns);
  }
  if (decoder) {
    auto note = out.decode_note;  // the proxy's own note (a cut stream) comes first
    decoder->finish(out);
    if (!note.empty())
      out.decode_note = out.decode_note.empty() ? note : note + "; " + out.decode_note;
  }
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
