// replay/request_body: a recorded body made into the sent body and its key from one parse, against
// the step-by-step chain replay ran before (each step parsing and writing the body on its own).
#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "format/trace.hpp"
#include "llm/llm.hpp"
#include "replay/replay.hpp"
#include "replay/request_body.hpp"

using namespace retrace;
using replay::BodyEdits;

namespace {

struct Recorded {
  std::string target, body;
};

// The chain as replay/prepare.cpp ran it: model, token ids, streaming, --unset/--set, each from
// the bytes the one before wrote, then the key of the final bytes.
replay::SentBody chained(const Recorded& recorded, const BodyEdits& edits) {
  std::string body = recorded.body;
  const auto dialect = llm::detect_dialect(recorded.target, body);
  boost::json::error_code ec;
  const auto parsed = boost::json::parse(body, ec);
  if (edits.model && llm::names_model(dialect) && !ec && parsed.is_object()) {
    const auto* model = parsed.get_object().if_contains("model");
    if (!model || !model->is_string() || model->get_string() != *edits.model)
      body = replay::apply_body_overrides(body, {{"model", boost::json::serialize(boost::json::string(*edits.model))}},
                                          {});
  }
  body = llm::add_token_id_fields(body, dialect, edits.token_ids);
  body = llm::set_streaming(body, dialect, edits.stream);
  body = replay::apply_body_overrides(body, edits.set, edits.unset);
  return {body, request_key("POST", "/sent" + recorded.target, body)};
}

std::vector<Recorded> recorded_bodies() {
  std::vector<Recorded> out{
      {"/v1/chat/completions", R"({"model":"m","messages":[{"role":"user","content":"hi"}]})"},
      {"/v1/chat/completions", R"({ "messages" : [ {"role":"user","content":"caf\u00e9 \/ x"} ], "temperature" : 1.50 })"},
      {"/v1/chat/completions", R"({"messages":[],"stream":true,"stream_options":{"include_usage":true}})"},
      {"/v1/chat/completions", R"({"messages":[],"stream":true,"stream_options":null,"logprobs":false})"},
      {"/v1/chat/completions", R"({"messages":[],"stream":"yes","stream_options":{"continuous_usage_stats":true}})"},
      {"/v1/chat/completions", R"({"model":7,"messages":[],"top_p":0.1,"x":[1e-7,3.141592653589793,1.7976931348623157e308,-0.0,18446744073709551615,-9223372036854775808]})"},
      {"/v1/completions", R"({"model":"other","prompt":"x","logprobs":5,"max_tokens":4})"},
      {"/v1/completions", "{}"},
      {"/v1/completions", "{\n  \"prompt\": \"x\"\n}\n"},
      {"/v1/completions", R"({"prompt":"dup","prompt":"last"})"},
      {"/completions", R"({"prompt":"x","n_predict":4})"},
      {"/completion", R"({"prompt":"x","n_probs":1,"stream":true})"},
      {"/generate", R"({"inputs":"x","parameters":{"max_new_tokens":3}})"},
      {"/generate", R"({"text":"x","sampling_params":{}})"},
      {"/", R"({"inputs":"x"})"},
      {"/v1/responses", R"({"model":"m","input":"x"})"},
      {"/v1/messages", R"({"model":"m","max_tokens":3,"messages":[]})"},
      {"/v1/embeddings", R"({"input":"x"})"},
      {"/v1/chat/completions", "[1,2]"},
      {"/v1/chat/completions", "not json {"},
      {"/v1/models", ""},
  };
  for (const auto& exchange :
       load_trace(std::filesystem::path(RETRACE_SOURCE_ROOT) / "traces" / "gold-intents.rtrace").exchanges)
    out.push_back({exchange.request.target, exchange.request.body});
  return out;
}

std::vector<BodyEdits> edit_sets() {
  std::vector<BodyEdits> out;
  const std::vector<std::optional<std::string>> models{std::nullopt, "m", "new-model"};
  const std::vector<std::vector<std::pair<std::string, std::string>>> sets{
      {}, {{"temperature", "0"}}, {{"stream_options.include_usage", "false"}}, {{"messages.0.content", "x"}}};
  const std::vector<std::vector<std::string>> unsets{{}, {"stream_options"}, {"prompt", "top_p"}};
  for (const auto& model : models)
    for (auto mode : {llm::TokenIdMode::off, llm::TokenIdMode::vllm, llm::TokenIdMode::llamacpp,
                      llm::TokenIdMode::logprobs})
      for (bool stream : {true, false})
        for (const auto& set : sets)
          for (const auto& unset : unsets) out.push_back({model, mode, stream, set, unset});
  return out;
}

}  // namespace

TEST_CASE("all edits on one parsed object give the bytes and key of the step by step chain") {
  std::size_t compared = 0, refused = 0, kept = 0;
  for (const auto& recorded : recorded_bodies()) {
    for (const auto& edits : edit_sets()) {
      INFO(recorded.target << " " << recorded.body << " model " << edits.model.value_or("-") << " ids "
                           << llm::to_string(edits.token_ids) << " stream " << edits.stream << " set "
                           << edits.set.size() << " unset " << edits.unset.size());
      std::optional<replay::SentBody> before;
      try {
        before = chained(recorded, edits);
      } catch (const std::invalid_argument&) {
      }
      if (!before) {
        CHECK_THROWS_AS(replay::prepare_body("POST", recorded.target, "/sent" + recorded.target, recorded.body, edits),
                        std::invalid_argument);
        ++refused;
        continue;
      }
      const auto now = replay::prepare_body("POST", recorded.target, "/sent" + recorded.target, recorded.body, edits);
      CHECK(now.bytes == before->bytes);
      CHECK(now.key == before->key);
      // The key taken from the object is the key of the bytes sent.
      CHECK(now.key == request_key("POST", "/sent" + recorded.target, now.bytes));
      ++compared;
      if (now.bytes == recorded.body) ++kept;
    }
  }
  // Every kind of outcome was met: sent as recorded, changed, refused.
  CHECK(compared > 1000);
  CHECK(kept > 100);
  CHECK(refused > 100);
}

TEST_CASE("a body no edit changes goes out as recorded byte for byte") {
  BodyEdits edits;
  edits.model = "m";
  edits.token_ids = llm::TokenIdMode::logprobs;
  edits.stream = true;
  const std::string body = " {\"model\" : \"m\", \"messages\":[], \"logprobs\":true, \"top_logprobs\":5,"
                           "\"stream\":true, \"stream_options\":{\"include_usage\":true}, \"t\":1.50}\n";
  const auto sent = replay::prepare_body("POST", "/v1/chat/completions", "/v1/chat/completions", body, edits);
  CHECK(sent.bytes == body);
  CHECK(sent.key == request_key("POST", "/v1/chat/completions", body));
  for (const std::string other : {"not json", "", "[1]"}) {
    const auto untouched = replay::prepare_body("GET", "/v1/chat/completions", "/x", other, edits);
    CHECK(untouched.bytes == other);
    CHECK(untouched.key == request_key("GET", "/x", other));
  }
}

TEST_CASE("a body that only gains fields keeps the client's bytes and has them appended") {
  BodyEdits edits;
  edits.model = "m";
  edits.token_ids = llm::TokenIdMode::vllm;
  edits.set = {{"seed", "7"}};
  const std::string body = "{ \"messages\" : [ {\"role\":\"user\",\"content\":\"caf\\u00e9\"} ], \"n\" : 1.50 }\n";
  const auto sent = replay::prepare_body("POST", "/v1/chat/completions", "/v1/chat/completions", body, edits);
  CHECK(sent.bytes == "{ \"messages\" : [ {\"role\":\"user\",\"content\":\"caf\\u00e9\"} ], \"n\" : 1.50 "
                      ",\"model\":\"m\",\"logprobs\":true,\"top_logprobs\":2,\"return_tokens_as_token_ids\":true,"
                      "\"return_token_ids\":true,\"stream\":true,\"stream_options\":{\"include_usage\":true},"
                      "\"seed\":7}\n");
  CHECK(sent.key == request_key("POST", "/v1/chat/completions", sent.bytes));
  // A value that changes makes it one serialisation of the object, in its key order.
  edits.set = {{"n", "2"}};
  CHECK(replay::prepare_body("POST", "/v1/chat/completions", "/t", body, edits).bytes ==
        R"({"messages":[{"role":"user","content":"café"}],"n":2,"model":"m","logprobs":true,"top_logprobs":2,)"
        R"("return_tokens_as_token_ids":true,"return_token_ids":true,"stream":true,)"
        R"("stream_options":{"include_usage":true}})");
}

TEST_CASE("a set or unset on a body that is not a JSON object is refused naming filter") {
  BodyEdits edits;
  edits.unset = {"x"};
  for (const std::string body : {"not json", "", "[1]"})
    CHECK_THROWS_WITH(replay::prepare_body("POST", "/v1/completions", "/v1/completions", body, edits),
                      Catch::Contains("not a JSON object") && Catch::Contains("--filter"));
}
