// The trace thread's half of recording: turning what a proxy worker captured into an Exchange.
#include <fnmatch.h>

#include <algorithm>

#include <boost/json.hpp>

#include "llm/llm.hpp"
#include "net/arrived_body.hpp"
#include "record/record.hpp"
#include "record/settings.hpp"
#include "base/described_json.hpp"

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

bool finish_exchange(CapturedExchange&& captured, const Redactor& redactor, std::uint64_t id,
                     Exchange& out, std::size_t decode_limit, DecodeWants* live, const WriterOptions& writer) {
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
  // arrived: each event keeps the arrival time of the coded bytes that completed it. The rule
  // (and the decode limit's, which counts events' bookkeeping) is replay's too.
  auto* tokens = decoder ? &*decoder : nullptr;
  // The caller's wants only where the word below is sure before decoding (net::live_wants, replay's
  // rule too): a decoder of a known dialect (it keeps it), a stream whose every event will be framed
  // and written in its record.
  if (live) {
    *live = net::live_wants(*live, decoder.has_value(), captured.event_stream, captured.body,
                            captured.content_encoding, decode_limit, out, writer);
    if (*live != DecodeWants{}) decoder->set_wants(*live);
  }
  const bool marked = captured.body.reads() > 0;
  std::int64_t last_ns = captured.body.last_offset_ns();
  auto decoded = net::decode_arrived(captured.body, captured.event_stream,
                                     captured.content_encoding, out.response, tokens, last_ns,
                                     decode_limit);
  if (!decoded.as_received && !captured.event_stream && tokens && !out.response.body.empty())
    tokens->on_body(out.response.body, marked ? last_ns : out.end_ns);
  // The proxy's own note (a cut stream) comes first, then the content coding's, then the
  // token decoder's.
  auto join = [](std::string first, const std::string& then) {
    return first.empty() ? then : then.empty() ? first : first + "; " + then;
  };
  auto note = join(std::move(out.decode_note), decoded.note);
  out.decode_note.clear();
  if (decoder) decoder->finish(out);
  out.decode_note = join(std::move(note), out.decode_note);
  // Every stored event went to the decoder as it was framed, and nothing after changes the events
  // or the choices (redaction reads headers only): the deriver's loop would make the same
  // choices. Not for a stream stored as received (past the decode limit or undecodable: the
  // decoder saw a prefix, or nothing), nor a decoder that ended in another dialect than it began.
  return decoder && captured.event_stream && !decoded.as_received && out.dialect == llm::to_string(dialect);
}

RecordSettings record_settings(const RecordOptions& options) {
  RecordSettings settings;
  settings.upstream = options.upstream.str();
  settings.listen = options.listen.host + ":" + std::to_string(options.listen.port);
  settings.session_header = options.session_header;
  if (!options.keep_secrets) {
    for (auto name : secret_header_names()) settings.redacted_headers.emplace_back(name);
    for (const auto& name : options.redact_headers) settings.redacted_headers.push_back(name);
  }
  settings.keep_secrets = options.keep_secrets;
  settings.include_paths = options.include_paths;
  settings.exclude_paths = options.exclude_paths;
  settings.max_body = options.max_body;
  settings.sample = options.sample;
  settings.seed = options.seed;
  settings.max_response_bytes = options.max_response_bytes;
  settings.flush_every = options.writer.flush_every;
  settings.flush_ms = options.writer.flush_ms;
  settings.upstream_timeout_ms = options.upstream_timeout.count();
  settings.insecure = options.tls.insecure;
  settings.ca_file = options.tls.ca_file;
  settings.derive_tokens = options.writer.derive_tokens;
  return settings;
}

RecordSettings parse_record_settings(const std::string& settings) {
  RecordSettings out;
  boost::system::error_code ec;
  auto value = boost::json::parse(settings, ec);
  if (!ec) described_json::read_json(value, out);
  return out;
}

std::string settings_json(const RecordOptions& options) {
  return boost::json::serialize(described_json::to_json(record_settings(options)));
}

}  // namespace retrace::record
