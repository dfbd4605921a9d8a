// Preflight: see replay/preflight.hpp.
#include "replay/preflight.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <set>

#include "base/json_fields.hpp"
#include "net/connection.hpp"
#include "replay/prepare.hpp"

namespace retrace::replay {

namespace json = boost::json;

namespace {

// /v1/models answers are small; /props carries a chat template, still well under this.
constexpr std::size_t kProbeBodyLimit = 4 * 1024 * 1024;

std::optional<json::object> json_object_of(const net::Fetched& fetched) {
  if (fetched.status != 200) return std::nullopt;
  json::error_code ec;
  auto value = json::parse(fetched.body, ec);
  if (ec || !value.is_object()) return std::nullopt;
  return std::move(value.get_object());
}

std::string string_or_empty(const std::optional<json::object>& object, std::string_view key) {
  if (!object) return "";
  auto text = llm::string_field(*object, key);
  return text ? std::string(*text) : "";
}

// owned_by of the first model /v1/models lists: vLLM "vllm", SGLang "sglang", llama.cpp
// "llamacpp", retrace serve "retrace-simulator" (TGI repeats the model id; hosted APIs name the
// organisation).
std::string owned_by(const net::Fetched& models) {
  auto object = json_object_of(models);
  const json::array* data = object ? llm::array_field(*object, "data") : nullptr;
  if (!data || data->empty() || !data->front().is_object()) return "";
  auto owner = llm::string_field(data->front().get_object(), "owned_by");
  return owner ? std::string(*owner) : "";
}

bool is_inference_dialect(llm::Dialect dialect) { return llm::names_model(dialect); }

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

}  // namespace

std::optional<std::string> ModelReader::operator()(const Exchange& exchange) {
  const auto& request = exchange.request;
  if (!is_inference_dialect(llm::detect_dialect(request.target, request.body))) return std::nullopt;
  json::error_code ec;
  auto body = json::parse(request.body, ec, arena_.fresh());
  if (ec || !body.is_object()) return std::nullopt;
  auto model = llm::string_field(body.get_object(), "model");
  return model ? std::string(*model) : std::string();
}

std::vector<std::string> served_models(const net::Fetched& models) {
  std::vector<std::string> ids;
  auto object = json_object_of(models);
  const json::array* data = object ? llm::array_field(*object, "data") : nullptr;
  if (!data) return ids;
  for (const auto& entry : *data)
    if (entry.is_object())
      if (auto id = llm::string_field(entry.get_object(), "id")) ids.emplace_back(*id);
  return ids;
}

ServerIdentity identify(const Probes& probes) {
  ServerIdentity server;
  const std::string owner = owned_by(probes.models);
  auto version = json_object_of(probes.version);
  auto info = json_object_of(probes.info);
  auto props = json_object_of(probes.props);
  auto model_info = json_object_of(probes.model_info);
  auto server_info = json_object_of(probes.server_info);
  const std::string version_text = string_or_empty(version, "version");

  if (owner == "retrace-simulator" || version_text.starts_with("retrace-sim")) {
    server.kind = "retrace-serve";
    server.version = version_text;
    server.evidence = owner == "retrace-simulator" ? "/v1/models owned_by retrace-simulator"
                                                    : "/version " + version_text;
  } else if (probes.models.server == "llama.cpp" || owner == "llamacpp" ||
             (props && props->contains("default_generation_settings"))) {
    server.kind = "llama.cpp";
    server.version = string_or_empty(props, "build_info");
    server.evidence = probes.models.server == "llama.cpp" ? "Server: llama.cpp"
                      : owner == "llamacpp"               ? "/v1/models owned_by llamacpp"
                                                          : "/props default_generation_settings";
  } else if (owner == "vllm") {
    server.kind = "vllm";
    server.version = version_text;
    server.evidence = "/v1/models owned_by vllm";
  } else if (owner == "sglang" || (model_info && model_info->contains("model_path"))) {
    server.kind = "sglang";
    server.version = string_or_empty(server_info, "version");
    server.evidence = owner == "sglang" ? "/v1/models owned_by sglang" : "/get_model_info model_path";
  } else if (string_or_empty(info, "router").starts_with("text-generation-router")) {
    server.kind = "tgi";
    server.version = string_or_empty(info, "version");
    server.evidence = "/info router text-generation-router";
  } else if (probes.models.status == 200 && json_object_of(probes.models)) {
    server.kind = "openai-compatible";
    server.version = version_text;
    server.evidence = owner.empty() ? "/v1/models" : "/v1/models owned_by " + owner;
  } else {
    server.evidence = "no /v1/models, /version, /info, /props or /get_model_info answer";
  }
  return server;
}

llm::TokenIdMode token_ids_for(const ServerIdentity& server, std::string& reason) {
  if (server.kind == "vllm") {
    reason = "vLLM: return_token_ids and token ids inside logprobs";
    return llm::TokenIdMode::vllm;
  }
  if (server.kind == "llama.cpp") {
    reason = "llama.cpp: logprobs carry token ids (native /completion: return_tokens)";
    return llm::TokenIdMode::llamacpp;
  }
  if (server.kind == "sglang" || server.kind == "tgi" || server.kind == "retrace-serve") {
    reason = server.kind + ": logprobs with per-token text and alternatives" +
             (server.kind == "tgi" ? " (native /generate: details)" : "");
    return llm::TokenIdMode::logprobs;
  }
  reason = "the target (" + server.kind +
           ") is not one whose token-id fields retrace knows: comparing text; try --token-ids "
           "logprobs if it returns logprobs";
  return llm::TokenIdMode::off;
}

std::string Preflight::to_json() const {
  json::object out;
  out["target"] = url.str();
  out["server"] = {{"kind", server.kind}, {"version", server.version}, {"evidence", server.evidence}};
  json::array listed;
  for (const auto& id : models) listed.emplace_back(id);
  out["models"] = std::move(listed);
  if (model) out["model"] = {{"name", *model}, {"why", model_reason}};
  out["token_ids"] = {{"mode", llm::to_string(token_ids)},
                      {"why", token_ids_reason.empty() ? "--token-ids" : token_ids_reason}};
  return json::serialize(out);
}

Preflight preflight(const LoadedTrace& input, const Options& options) {
  check_schedule(input, options);  // bad input is exit 2 whether or not the target is up
  InputFacts facts;
  ModelReader model_of;
  for (auto index : select_exchanges(input.exchanges, options, options.sessions || options.live_sessions))
    if (auto model = model_of(input.exchanges[index])) facts.models.insert(*model);
  facts.rejected = rejected_by_record(input.exchanges);
  return preflight(facts, options);
}

Preflight preflight(const InputFacts& input, const Options& options) {
  Preflight checked;
  checked.url = net::parse_url(options.target);
  // Trace targets start with /v1 already; a base URL in the OpenAI SDKs' form names the same root.
  if (checked.url.base_path.ends_with("/v1"))
    checked.url.base_path.resize(checked.url.base_path.size() - 3);

  std::shared_ptr<boost::asio::ssl::context> tls;
  if (checked.url.tls()) tls = net::make_client_tls_context({options.ca_file, options.insecure});
  std::vector<HttpHeader> headers = options.headers;
  if (options.api_key) headers.push_back({"Authorization", "Bearer " + *options.api_key});
  // Bounded so that a dead or stalled target costs seconds, not the whole --timeout.
  auto timeout = std::min<std::chrono::steady_clock::duration>(options.timeout, std::chrono::seconds(5));
  auto get = [&](std::string_view path) {
    return net::fetch(checked.url, tls, path, timeout, kProbeBodyLimit, headers);
  };

  auto& probes = checked.probes;
  probes.models = get("/v1/models");
  if (!probes.models.connected)
    throw PreflightError("nothing answers at " + checked.url.str() + " (" + probes.models.error +
                         "); start the server there, or give --target the URL it listens on" +
                         (checked.url.tls() ? " (--ca-file PEM or --insecure for a certificate "
                                              "retrace cannot verify)"
                                            : ""));
  if (probes.models.status == 0) {
    // Something listens but did not answer: the run goes on and records what each request meets;
    // more probes would only wait out the same timeout.
    checked.notes.push_back("the target accepted a connection but GET /v1/models got no answer (" +
                            probes.models.error + "); replaying anyway");
    checked.server = identify(probes);
    checked.token_ids = options.token_ids.value_or(llm::TokenIdMode::off);
    return checked;
  }
  probes.version = get("/version");
  probes.info = get("/info");
  probes.props = get("/props");
  probes.server_info = get("/server_info");
  if (probes.server_info.status == 404) probes.server_info = get("/get_server_info");
  probes.model_info = get("/get_model_info");
  checked.server = identify(probes);
  checked.models = served_models(probes.models);
  if (probes.models.status == 401 || probes.models.status == 403)
    checked.notes.push_back("the target refused GET /v1/models (HTTP " +
                            std::to_string(probes.models.status) +
                            "): pass its key with --api-key-env VAR");

  if (options.model) {
    checked.model = options.model;
    checked.model_reason = "--model";
  } else if (!checked.models.empty()) {
    std::vector<std::string> unserved;
    for (const auto& model : input.models)
      if (std::find(checked.models.begin(), checked.models.end(), model) == checked.models.end())
        unserved.push_back(model.empty() ? "(none)" : model);
    if (!unserved.empty() && checked.models.size() == 1) {
      checked.model = checked.models.front();
      checked.model_reason = "replaces " + joined(unserved) + ", not served by the target";
      checked.notes.push_back("requests for model " + joined(unserved) + " go to " + *checked.model +
                              ", the one model " + checked.url.str() + " serves");
    } else if (!unserved.empty()) {
      throw PreflightError("the trace asks for model " + joined(unserved) + ", which " +
                           checked.url.str() + " does not serve; it serves " +
                           joined(checked.models) + ": choose one with --model NAME");
    }
  }

  if (options.token_ids) {
    checked.token_ids = *options.token_ids;
  } else {
    checked.token_ids = token_ids_for(checked.server, checked.token_ids_reason);
    if (checked.token_ids == llm::TokenIdMode::off)
      checked.notes.push_back("--token-ids auto: " + checked.token_ids_reason);
  }
  if (auto rejected = input.rejected)
    checked.notes.push_back("skipped " + std::to_string(rejected) +
                            " request(s) record rejected itself (400/413/431, never sent upstream)");
  return checked;
}

}  // namespace retrace::replay
