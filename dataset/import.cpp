#include "dataset/import.hpp"

#include <boost/json.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>

#include "base/described_json.hpp"
#include "dataset/import_endpoints.hpp"
#include "dataset/import_settings.hpp"
#include "dataset/json_errors.hpp"
#include "format/header.hpp"
#include "dataset/staged_output.hpp"
#include "base/text.hpp"

namespace retrace {

namespace json = boost::json;

namespace {


std::string kind_name(const json::value& value) {
  switch (value.kind()) {
    case json::kind::object: return "an object";
    case json::kind::array: return "an array";
    case json::kind::string: return "a string";
    case json::kind::bool_: return "a boolean";
    case json::kind::null: return "null";
    default: return "a number";
  }
}

// A scalar as label text: strings as themselves, numbers as JSON prints them.
std::optional<std::string> scalar_text(const json::value& value) {
  if (value.is_string()) return std::string(value.get_string());
  if (value.is_number() || value.is_bool()) return json::serialize(value);
  return std::nullopt;
}

// A request target goes on the wire as part of the request line: a space, CR, LF or any other
// control byte in it would end the line early or start a header of the sender's choosing.
bool is_wire_safe_target(std::string_view target) {
  if (target.empty() || target[0] != '/') return false;
  for (unsigned char c : target)
    if (c <= 0x20 || c >= 0x7f) return false;
  return true;
}

// An HTTP method is a token (RFC 9110 5.6.2); retrace sends the usual upper-case ones.
bool is_method(std::string_view method) {
  if (method.empty() || method.size() > 16) return false;
  for (char c : method)
    if (c < 'A' || c > 'Z') return false;
  return true;
}

// Boost.JSON reads a number too large for a double (1e400) as infinity, which JSON cannot write
// back (it would come out as "Infinity"): such a number is refused where it stands.
void refuse_non_finite(const json::value& value, const std::string& where) {
  switch (value.kind()) {
    case json::kind::double_:
      if (!std::isfinite(value.get_double()))
        throw TraceError(where + " is a number out of range (too large for a double)");
      return;
    case json::kind::array: {
      std::size_t index = 0;
      for (const auto& item : value.get_array())
        refuse_non_finite(item, where + "[" + std::to_string(index++) + "]");
      return;
    }
    case json::kind::object:
      for (const auto& field : value.get_object())
        refuse_non_finite(field.value(), where + "." + std::string(field.key()));
      return;
    default:
      return;
  }
}

// The fields every body gets: what a server would refuse, refused here with the field named.
void check_body_fields(const json::object& body) {
  if (const auto* model = body.if_contains("model"); model && !model->is_string())
    throw TraceError("\"model\" must be a string, not " + kind_name(*model));
  if (const auto* temperature = body.if_contains("temperature")) {
    bool ok = temperature->is_number() && temperature->to_number<double>() >= 0;
    if (!ok)
      throw TraceError("\"temperature\" must be a number of at least 0, not " +
                       json::serialize(*temperature));
  }
  for (std::string_view name : {"max_tokens", "max_completion_tokens", "max_output_tokens"}) {
    const auto* limit = body.if_contains(name);
    if (!limit || limit->is_null()) continue;
    bool ok = (limit->is_int64() && limit->get_int64() > 0) ||
              (limit->is_uint64() && limit->get_uint64() <= INT64_MAX);
    if (!ok)
      throw TraceError("\"" + std::string(name) + "\" must be a whole number above 0, not " +
                       json::serialize(*limit));
  }
}

class LineImporter {
 public:
  explicit LineImporter(const ImportOptions& options)
      : options_(options), endpoint_(import_endpoint(options.endpoint).value_or(ImportEndpoint::chat)) {}

  // Fills `exchange` from one parsed line; throws TraceError (prefixed by the caller).
  void build(const json::object& line, Exchange& exchange) {
    if (options_.from == "openai-batch")
      build_batch(line, exchange);
    else
      build_jsonl(line, exchange);
    check_request(exchange);
    exchange.request.headers = {HttpHeader{"content-type", "application/json"}};
    exchange.key = request_key(exchange.request.method, exchange.request.target,
                               exchange.request.body);
  }

 private:
  [[noreturn]] static void bad(const std::string& what) { throw TraceError(what); }

  static void check_request(const Exchange& exchange) {
    if (!is_method(exchange.request.method))
      bad("\"method\" must be an HTTP method such as \"POST\", not \"" +
          exchange.request.method + "\"");
    if (!is_wire_safe_target(exchange.request.target))
      bad("\"url\" must be a path without spaces or control characters (CR, LF, ...)");
  }

  // `endpoint`: where the body goes (nullopt: a batch line's other url, given chat's defaults).
  void fill_defaults(json::object& body, const json::object& line, std::optional<ImportEndpoint> endpoint) {
    // A null fallback adds nothing: a line without a model gets none unless --model gives one.
    auto take = [&](std::string_view name, json::value fallback) {
      if (const auto* given = line.if_contains(name))
        body[name] = *given;
      else if (!body.contains(name) && !fallback.is_null())
        body[name] = std::move(fallback);
    };
    take("model", options_.model.empty() ? json::value(nullptr) : json::value(json::string(options_.model)));
    if (endpoint == ImportEndpoint::embeddings) return check_body_fields(body);  // nothing is sampled
    const auto* model = body.if_contains("model");
    // An o-series model refuses any temperature but its default: none is added for it.
    const bool fixed_temperature = model && model->is_string() && rejects_temperature(model->get_string());
    take("temperature", fixed_temperature ? json::value(nullptr) : json::value(0));
    if (options_.greedy) body["temperature"] = 0;
    if (endpoint == ImportEndpoint::responses) {
      // The Responses API's limit is max_output_tokens; a line's "max_tokens" sets it.
      if (const auto* given = line.if_contains("max_tokens")) body["max_output_tokens"] = *given;
      else if (!body.contains("max_output_tokens")) body["max_output_tokens"] = options_.max_tokens;
      return check_body_fields(body);
    }
    take("max_completion_tokens", nullptr);  // no default: kept where the line gives it
    // One output limit: a body with max_completion_tokens (the chat API's newer name) gets no
    // max_tokens besides it.
    take("max_tokens", body.contains("max_completion_tokens") ? json::value(nullptr)
                                                              : json::value(options_.max_tokens));
    check_body_fields(body);
  }

  void build_jsonl(const json::object& line, Exchange& exchange) {
    if (line.contains("custom_id") && line.contains("body"))
      bad("this looks like an OpenAI Batch line (custom_id, body); use --from openai-batch");
    const json::value* prompt = line.if_contains("prompt");
    const json::value* messages = line.if_contains("messages");
    const json::value* request = line.if_contains("request");
    int given = (prompt != nullptr) + (messages != nullptr) + (request != nullptr);
    if (given != 1)
      bad(given == 0 ? "expected one of \"prompt\", \"messages\" or \"request\""
                     : "give only one of \"prompt\", \"messages\" and \"request\"");

    json::object body;
    std::string_view path;
    if (request) {
      if (!request->is_object())
        bad("\"request\" must be an object (a whole request body), not " + kind_name(*request));
      body = request->get_object();
      // A whole body goes where --endpoint says when it names one of the newer APIs (their bodies
      // have "messages" or "input" too); otherwise chat's and completions' bodies tell themselves.
      if (endpoint_ == ImportEndpoint::responses || endpoint_ == ImportEndpoint::messages ||
          endpoint_ == ImportEndpoint::embeddings)
        path = endpoint_path(endpoint_);
      else if (body.contains("messages"))
        path = endpoint_path(ImportEndpoint::chat);
      else if (body.contains("prompt"))
        path = endpoint_path(ImportEndpoint::completions);
      else
        path = endpoint_path(endpoint_);
    } else if (messages) {
      if (!messages->is_array() || messages->get_array().empty())
        bad("\"messages\" must be a non-empty array of {\"role\", \"content\"} objects");
      for (const auto& message : messages->get_array())
        if (!message.is_object() || !message.get_object().contains("role"))
          bad("every entry of \"messages\" must be an object with a \"role\"");
      if (!options_.model.empty()) body["model"] = options_.model;
      put_messages(body, endpoint_, messages->get_array());
      path = endpoint_path(endpoint_);
    } else {
      if (!prompt->is_string()) bad("\"prompt\" must be a string, not " + kind_name(*prompt));
      if (!options_.model.empty()) body["model"] = options_.model;
      put_prompt(body, endpoint_, *prompt);
      path = endpoint_path(endpoint_);
    }
    fill_defaults(body, line, endpoint_of_path(path));

    exchange.request.method = "POST";
    exchange.request.target = std::string(path);
    exchange.request.body = json::serialize(body);
    if (const auto* expected = line.if_contains("expected"); expected && !expected->is_null()) {
      auto text = scalar_text(*expected);
      if (!text) bad("\"expected\" must be a string or a number, not " + kind_name(*expected));
      exchange.expected = *text;
    }
    if (const auto* id = line.if_contains("id"); id && !id->is_null()) {
      auto text = scalar_text(*id);
      if (!text) bad("\"id\" must be a string or a number, not " + kind_name(*id));
      exchange.labels.push_back(Label{"id", *text});
    }
  }

  void build_batch(const json::object& line, Exchange& exchange) {
    const auto* custom_id = line.if_contains("custom_id");
    const auto* method = line.if_contains("method");
    const auto* url = line.if_contains("url");
    const auto* body = line.if_contains("body");
    if (!custom_id || !custom_id->is_string()) bad("\"custom_id\" must be a string");
    if (!url || !url->is_string() || url->get_string().empty() || url->get_string()[0] != '/')
      bad("\"url\" must be a path such as \"/v1/chat/completions\"");
    if (!body || !body->is_object()) bad("\"body\" must be an object (the request body)");
    if (method && !method->is_string()) bad("\"method\" must be a string such as \"POST\"");
    json::object request_body = body->get_object();
    fill_defaults(request_body, json::object{}, endpoint_of_path(url->get_string()));
    exchange.request.method = method ? std::string(method->get_string()) : "POST";
    exchange.request.target = std::string(url->get_string());
    exchange.request.body = json::serialize(request_body);
    exchange.labels.push_back(Label{"id", std::string(custom_id->get_string())});
  }

  const ImportOptions& options_;
  ImportEndpoint endpoint_;
};

}  // namespace

std::uint64_t import_dataset(const std::filesystem::path& in, const std::filesystem::path& out,
                             const ImportOptions& options, ImportNotes* notes) {
  if (options.from != "jsonl" && options.from != "openai-batch")
    throw TraceError("unknown input format \"" + options.from + "\"; use jsonl or openai-batch");
  if (!import_endpoint(options.endpoint))
    throw TraceError("unknown endpoint \"" + options.endpoint +
                     "\"; use chat, completions, responses, messages or embeddings");
  std::ifstream input(in, std::ios::binary);
  if (!input) throw TraceError("cannot open " + in.string() + ": " + std::strerror(errno));
  StagedOutput staged(in, out);

  DatasetImportSettings settings;
  settings.from = options.from;
  settings.endpoint = options.endpoint;
  if (!options.model.empty()) settings.model = options.model;
  settings.max_tokens = options.max_tokens;
  settings.greedy = options.greedy;
  TraceHeader header = new_trace_header(Source::imported, options.tool_version, in.string(),
                                        json::serialize(described_json::to_json(settings)),
                                        *options.writer.clock);

  std::uint64_t written = 0;
  {
    TraceWriter writer(staged.temporary(), header, options.writer);
    LineImporter importer(options);
    json::parser parser;
    std::string line;
    std::uint64_t line_number = 0;
    Exchange exchange;
    while (std::getline(input, line)) {
      ++line_number;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.find_first_not_of(" \t") == std::string::npos) continue;
      std::string where = in.string() + ":" + std::to_string(line_number) + ": ";
      auto lone_surrogates = replace_lone_surrogate_escapes(line);
      if (notes) notes->lone_surrogates += lone_surrogates;
      parser.reset();
      boost::json::error_code error;
      parser.write(line, error);
      if (error) throw TraceError(where + json_error_text(error));
      json::value value = parser.release();
      if (!value.is_object())
        throw TraceError(where + "expected a JSON object, got " + kind_name(value));
      try {
        refuse_non_finite(value, "the line");
      } catch (const TraceError& e) {
        throw TraceError(where + e.what());
      }
      exchange = Exchange{};
      exchange.id = written + 1;
      exchange.response.status = 0;
      try {
        importer.build(value.get_object(), exchange);
      } catch (const TraceError& e) {
        throw TraceError(where + e.what());
      }
      writer.write(exchange);
      ++written;
    }
    if (input.bad()) throw TraceError("cannot read " + in.string() + ": " + std::strerror(errno));
    if (written == 0) throw TraceError(in.string() + ": no requests found (the file is empty)");
    writer.close();
  }
  staged.commit();
  return written;
}

}  // namespace retrace
