// diff/ on output parts (format/trace.hpp): each part compared on its own, the part named, tool
// calls never equal to text, embeddings by value, and what diff cannot compare said so. The
// exchanges are decoded from response bytes as record decodes them and written to real trace
// files, read back through the outputs-only reader diff uses.
#include <catch2/catch.hpp>

#include "diff/diff.hpp"
#include "llm/llm.hpp"
#include "tests/temp_dir.hpp"

using namespace retrace;
using namespace retrace::diff;

namespace {

std::string chat_chunk(std::string_view delta_json, std::string_view finish = "null") {
  return "data: {\"choices\":[{\"index\":0,\"delta\":" + std::string(delta_json) + ",\"finish_reason\":" +
         std::string(finish) + "}]}\n\n";
}

// A recorded exchange whose streamed response is `body`, decoded as record decodes it.
Exchange streamed_exchange(std::uint64_t id, std::string target, std::string body) {
  Exchange exchange;
  exchange.id = id;
  exchange.request.method = "POST";
  exchange.request.target = std::move(target);
  exchange.request.body = "{\"model\":\"m\",\"n\":" + std::to_string(id) + "}";
  exchange.key = request_key(exchange.request.method, exchange.request.target, exchange.request.body);
  exchange.response.status = 200;
  exchange.response.streamed = true;
  exchange.response.events.push_back({1000, std::move(body)});
  llm::decode_exchange(exchange);
  return exchange;
}

Exchange whole_exchange(std::uint64_t id, std::string target, std::string body) {
  Exchange exchange = streamed_exchange(id, std::move(target), "");
  exchange.response.streamed = false;
  exchange.response.events.clear();
  exchange.response.body = std::move(body);
  llm::decode_exchange(exchange);
  return exchange;
}

std::string reasoning_then_answer(std::string_view reasoning, std::string_view answer) {
  return chat_chunk("{\"reasoning_content\":\"" + std::string(reasoning) + "\"}") +
         chat_chunk("{\"content\":\"" + std::string(answer) + "\"}", "\"stop\"") + "data: [DONE]\n\n";
}

// The runs written to trace files and compared from them, in passes and in lockstep alike.
Result compare_runs(const std::vector<Exchange>& baseline, const std::vector<Exchange>& candidate,
                    Options options = {}) {
  TempDir dir;
  for (const auto& [name, exchanges] : {std::pair{"a.rtrace", &baseline}, std::pair{"b.rtrace", &candidate}}) {
    TraceWriter writer(dir / name, TraceHeader{});
    for (const Exchange& exchange : *exchanges) writer.write(exchange);
    writer.close();
  }
  options.lockstep = false;
  Result in_passes = compare_files(dir / "a.rtrace", {dir / "b.rtrace"}, options);
  options.lockstep = true;
  Result in_lockstep = compare_files(dir / "a.rtrace", {dir / "b.rtrace"}, options);
  REQUIRE(in_passes.runs.front().matrix == in_lockstep.runs.front().matrix);
  return in_lockstep;
}

}  // namespace

TEST_CASE("Answers whose visible content differs only at a moved part boundary now differ") {
  // Joined, both are "I see. The answer is 42": the old comparison called them identical.
  const Exchange before = streamed_exchange(1, "/v1/chat/completions", reasoning_then_answer("I see.", " The answer is 42"));
  const Exchange after = streamed_exchange(1, "/v1/chat/completions", reasoning_then_answer("I see", ". The answer is 42"));
  const Result result = compare_runs({before}, {after});
  const RunComparison& run = result.runs.front();
  CHECK(run.divergent == 1);
  CHECK(run.identical == 0);
  REQUIRE(run.pairs.size() == 1);
  const auto& divergences = run.pairs.front().divergences;
  REQUIRE(divergences.size() == 2);
  CHECK(divergences[0].part == Part::reasoning);
  CHECK(divergences[0].byte_offset == 5);
  CHECK(divergences[1].part == Part::content);
  CHECK(divergences[1].byte_offset == 0);
  CHECK(parts_changed(divergences) == "reasoning changed first, then answer");
}

TEST_CASE("A change in the reasoning alone is reported as reasoning changed with the answer the same") {
  const Exchange before = streamed_exchange(1, "/v1/chat/completions", reasoning_then_answer("Six times seven.", "42"));
  const Exchange after = streamed_exchange(1, "/v1/chat/completions", reasoning_then_answer("Seven times six.", "42"));
  const Exchange same = streamed_exchange(2, "/v1/chat/completions", reasoning_then_answer("Hm.", "Yes"));
  const Result result = compare_runs({before, same}, {after, same});
  const RunComparison& run = result.runs.front();
  CHECK(run.matrix == "D.");
  REQUIRE(run.pairs.size() == 1);
  const auto& divergences = run.pairs.front().divergences;
  REQUIRE(divergences.size() == 1);
  CHECK(divergences[0].part == Part::reasoning);
  CHECK(part_name(divergences[0], false) == "reasoning");
  CHECK(parts_changed(divergences) == "reasoning changed, answer the same");
}

TEST_CASE("A tool call f with arguments is not equal to the text answer f with the same characters") {
  const std::string call = chat_chunk(R"({"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f"}}]})") +
                           chat_chunk(R"({"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":1}"}}]})",
                                      "\"tool_calls\"") +
                           "data: [DONE]\n\n";
  const std::string text = chat_chunk(R"({"content":"f{\"a\":1}"})", "\"stop\"") + "data: [DONE]\n\n";
  const Exchange as_call = streamed_exchange(1, "/v1/chat/completions", call);
  const Exchange as_text = streamed_exchange(1, "/v1/chat/completions", text);
  REQUIRE(as_call.choices.size() == 2);
  CHECK(llm::choice_text(as_call.choices[1]) == R"({"a":1})");
  const Result result = compare_runs({as_call}, {as_text});
  const RunComparison& run = result.runs.front();
  CHECK(run.divergent == 1);
  REQUIRE(run.pairs.size() == 1);
  const auto& divergences = run.pairs.front().divergences;
  REQUIRE(divergences.size() == 2);
  CHECK(divergences[0].part == Part::content);
  CHECK(divergences[1].part == Part::tool_call);
  CHECK(divergences[1].basis_note == "part absent on the candidate");
  CHECK(part_name(divergences[1], false) == "tool call 0 (f)");
}

TEST_CASE("Two tool calls with the same arguments to different functions differ at the name") {
  const Exchange a = whole_exchange(1, "/v1/chat/completions",
                                    R"({"choices":[{"index":0,"message":{"content":null,"tool_calls":[{"id":"x",)"
                                    R"("type":"function","function":{"name":"get_time","arguments":"{}"}}]},)"
                                    R"("finish_reason":"tool_calls"}]})");
  Exchange b = a;
  b.response.body.replace(b.response.body.find("get_time"), 8, "get_date");
  llm::decode_exchange(b);
  const Result result = compare_runs({a}, {b});
  REQUIRE(result.runs.front().pairs.size() == 1);
  const auto& divergences = result.runs.front().pairs.front().divergences;
  REQUIRE(divergences.size() == 1);
  CHECK(divergences[0].basis_note == "the function's name differs");
  CHECK(divergences[0].classification == Classification::real_change);
  CHECK(divergences[0].byte_offset == 4);
}

TEST_CASE("Embeddings compare by their largest difference against the tolerance") {
  const auto body = [](std::string_view second) {
    return std::string(R"({"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.25,)") +
           std::string(second) + R"(,-1.5]}],"usage":{"prompt_tokens":3,"total_tokens":3}})";
  };
  const Exchange a = whole_exchange(1, "/v1/embeddings", body("0.5"));
  const Exchange b = whole_exchange(1, "/v1/embeddings", body("0.5001"));
  REQUIRE(a.choices.size() == 1);
  CHECK(a.choices[0].part == Part::embedding);

  const Result exact = compare_runs({a}, {b});
  REQUIRE(exact.runs.front().pairs.size() == 1);
  const Divergence& divergence = exact.runs.front().pairs.front().divergences.at(0);
  CHECK(divergence.part == Part::embedding);
  REQUIRE(divergence.largest_difference);
  CHECK(*divergence.largest_difference == Approx(0.0001).epsilon(1e-6));
  CHECK(divergence.values_differing == 1);
  CHECK(divergence.baseline_index == 1);
  CHECK(divergence.classification == Classification::unknown);

  Options loose;
  loose.embedding_tolerance = 0.001;
  CHECK(compare_runs({a}, {b}, loose).runs.front().identical == 1);
  Options tight;
  tight.embedding_tolerance = 0.00001;
  const Result beyond = compare_runs({a}, {b}, tight);
  CHECK(beyond.runs.front().divergent == 1);
  CHECK(beyond.runs.front().real_changes == 1);
  CHECK(compare_runs({a}, {a}).runs.front().identical == 1);
}

TEST_CASE("Exchanges without decoded output are not compared and say why") {
  Exchange rerank = whole_exchange(1, "/v1/rerank", R"({"results":[{"index":0,"relevance_score":0.9}]})");
  REQUIRE(rerank.choices.empty());
  Exchange other = rerank;
  other.response.body = R"({"results":[{"index":0,"relevance_score":0.1}]})";
  Exchange models;  // a model listing carries no output: set aside from both sides, and said
  models.id = 2;
  models.request.method = "GET";
  models.request.target = "/v1/models";
  models.key = request_key("GET", "/v1/models", "");
  models.response.status = 200;
  const Result result = compare_runs({rerank, models}, {other, models});
  const RunComparison& run = result.runs.front();
  CHECK(run.matrix == "N");
  CHECK(run.not_compared == 1);
  CHECK(run.identical == 0);
  std::size_t set_aside_notes = 0;
  for (const std::string& warning : result.warnings)
    if (warning.find("1 exchange(s) set aside: GET or HEAD requests with no output") != std::string::npos)
      ++set_aside_notes;
  CHECK(set_aside_notes == 2);  // the baseline's and the candidate's
  REQUIRE(run.not_compared_why.size() == 1);
  CHECK(run.not_compared_why.begin()->first.find("no output decoded from POST /v1/rerank") != std::string::npos);
  CHECK(failing_outputs(result, FailOn::any) == 1);
  CHECK(failing_outputs(result, FailOn::real) == 1);
  CHECK(failing_outputs(result, FailOn::none) == 0);
}

TEST_CASE("Traces without parts compare among themselves as they did") {
  // A 1.2 trace read back: one content Choice holding the joined text, on both sides.
  Exchange a = streamed_exchange(1, "/v1/chat/completions", reasoning_then_answer("I see.", " The answer is 42"));
  Exchange b = a;
  for (Exchange* exchange : {&a, &b}) {
    Choice joined;
    joined.kind = TokenKind::text_deltas;
    joined.finish_reason = "stop";
    for (const Choice& choice : exchange->choices)
      for (const Token& token : choice.tokens) joined.tokens.push_back(token);
    exchange->choices = {joined};
  }
  b.choices[0].tokens[0].bytes = "I see";
  b.choices[0].tokens[1].bytes = ". The answer is 42";
  CHECK(compare_runs({a}, {b}).runs.front().identical == 1);
}
