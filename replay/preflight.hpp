// Preflight: what `replay`, `sweep` and `bisect` learn about the target before any traffic.
//
// 1. The target is reached: when nothing answers, PreflightError names the URL and the cause, and
//    no request is sent (the CLI exits 2).
// 2. A base URL ending in /v1 (the OpenAI SDKs' habit) is taken as the server's root, since trace
//    targets already start with /v1: requests never go to /v1/v1/....
// 3. /v1/models says which models the target serves. A request body whose "model" the target does
//    not serve (or that names none) gets the served model when there is exactly one; with several,
//    PreflightError lists them and points to --model, which sets the model of every request.
// 4. The server is identified from what it exposes (identify(), below), so that --token-ids auto
//    can ask for the fields that server understands, and the run's header says what answered.
//
// Everything learnt is recorded in the run's header (server_info "server" and "preflight").
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>


#include "base/json_arena.hpp"
#include "llm/llm.hpp"
#include "net/fetch.hpp"
#include "net/url.hpp"
#include "replay/replay.hpp"

namespace retrace::replay {

// Set-up failures found before any traffic: nothing answers, several models and no --model.
class PreflightError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What the target answered on each path identify() reads; status 0 when nothing came back.
struct Probes {
  net::Fetched models;       // GET /v1/models: every OpenAI-compatible server; owned_by names vLLM,
                             // SGLang, llama.cpp and retrace serve
  net::Fetched version;      // GET /version: vLLM {"version"}, retrace serve {"version":"retrace-sim …"}
  net::Fetched info;         // GET /info: TGI {"model_id","version","router":"text-generation-router"}
  net::Fetched props;        // GET /props: llama.cpp {"build_info","default_generation_settings",…}
  net::Fetched server_info;  // GET /server_info: SGLang {"version",…} (older: /get_server_info)
  net::Fetched model_info;   // GET /get_model_info: SGLang {"model_path","is_generation",…}
};

struct ServerIdentity {
  // "vllm", "sglang", "llama.cpp", "tgi", "retrace-serve", "openai-compatible" (answers
  // /v1/models, nothing more specific) or "unknown".
  std::string kind = "unknown";
  std::string version;   // "" when the server does not say
  std::string evidence;  // what told: "Server: llama.cpp", "/v1/models owned_by vllm", ...
};

// Pure: reads the answers, asks nothing.
ServerIdentity identify(const Probes& probes);

// The ids a /v1/models answer lists, in its order; empty when it is not one.
std::vector<std::string> served_models(const net::Fetched& models);

// --token-ids auto: the mode that gets token ids (or at least per-token text) from `server`, and
// a one-line reason. Unknown servers get off (text), and the reason says what to try.
llm::TokenIdMode token_ids_for(const ServerIdentity& server, std::string& reason);

struct Preflight {
  net::Url url;  // the target as requests use it: a trailing /v1 removed
  Probes probes;
  std::vector<std::string> models;  // what /v1/models lists
  ServerIdentity server;
  std::optional<std::string> model;  // every inference request's model, when set
  std::string model_reason;          // why: "--model", or which models it replaces
  llm::TokenIdMode token_ids = llm::TokenIdMode::off;
  std::string token_ids_reason;      // "" when given on the command line
  std::vector<std::string> notes;    // one line each, for stderr: what changed and why

  // {"target", "server": {kind, version, evidence}, "models", "model", "token_ids"} for the header.
  std::string to_json() const;
};

// The model an OpenAI-style inference request's body names ("" for none); nullopt for any other
// request. One reader parses every body into the same small buffer.
class ModelReader {
 public:
  std::optional<std::string> operator()(const Exchange& exchange);

 private:
  llm::JsonArena arena_{4096};
};

// What the preflight needs of the input, gathered over the exchanges `options` selects.
struct InputFacts {
  std::set<std::string> models;  // ModelReader's, of every chosen request
  std::size_t rejected = 0;      // requests record rejected itself: a note
};

// Runs the preflight for replaying the exchanges `options` selects from `input` (its schedule
// checked first). Throws PreflightError (nothing could run), std::invalid_argument for a bad URL
// or input that cannot be replayed as `options` ask.
Preflight preflight(const LoadedTrace& input, const Options& options);
// The same for an input whose facts were gathered as it was read (replay/feed.hpp).
Preflight preflight(const InputFacts& input, const Options& options);

}  // namespace retrace::replay
