// The simulator's engine: tokenizer, deterministic model, batch variance, stops, known answers.
#include <catch2/catch.hpp>

#include <fstream>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "sim/engine.hpp"

using namespace retrace::sim;

namespace {

std::vector<TokenId> generate(const Model& model, std::string_view prompt, int split_count,
                              SamplingParams params = {}) {
  Generation generation(model, model.tokenizer().encode(prompt), std::move(params));
  while (!generation.finished()) generation.step(split_count);
  return generation.tokens();
}

SamplingParams greedy(int max_tokens) {
  SamplingParams params;
  params.temperature = 0;
  params.max_tokens = max_tokens;
  return params;
}

}  // namespace

TEST_CASE("the tokenizer round-trips English text - arbitrary bytes and UTF-8") {
  Tokenizer tokenizer;
  for (std::string text : {std::string("The quick brown fox jumps over the lazy dog. It's 42!\n\nNew paragraph."),
                           std::string("Classify the intent: I'd like a refund for order #1234, please."),
                           std::string("caf\xc3\xa9 \xe2\x98\x95 na\xc3\xafve"), std::string("\x00\xff\x01 tail", 8),
                           std::string()}) {
    std::vector<TokenId> tokens = tokenizer.encode(text);
    CHECK(tokenizer.decode(tokens) == text);
  }
}

TEST_CASE("common words with a leading space are single tokens") {
  Tokenizer tokenizer;
  CHECK(tokenizer.encode(" the").size() == 1);
  CHECK(tokenizer.encode("The answer is").size() == 3);
  CHECK(tokenizer.size() > 2000);
  CHECK(tokenizer.size() < 10000);
}

TEST_CASE("greedy generation is deterministic and depends on the prompt") {
  Model model;
  auto first = generate(model, "Tell me a story about the sea.", Model::kFixedSplitCount, greedy(64));
  auto second = generate(model, "Tell me a story about the sea.", Model::kFixedSplitCount, greedy(64));
  auto other = generate(model, "Tell me a story about the land.", Model::kFixedSplitCount, greedy(64));
  CHECK(first == second);
  CHECK(first != other);
  CHECK(!first.empty());
}

TEST_CASE("generated text reads as words") {
  Model model;
  Generation generation(model, model.tokenizer().encode("Once upon a time"), greedy(40));
  while (!generation.finished()) generation.step(Model::kFixedSplitCount);
  std::string text(generation.text());
  std::size_t letters = 0;
  for (char c : text) letters += (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  CHECK(letters * 10 > text.size() * 7);
  CHECK(text.find(' ') != std::string::npos);
}

TEST_CASE("sampling is reproducible with a seed and varies across seeds") {
  Model model;
  SamplingParams params;
  params.temperature = 1.0f;
  params.max_tokens = 32;
  params.seed = 7;
  auto a = generate(model, "Write something.", Model::kFixedSplitCount, params);
  auto b = generate(model, "Write something.", Model::kFixedSplitCount, params);
  CHECK(a == b);
  int differing = 0;
  for (std::uint64_t seed = 8; seed < 16; ++seed) {
    params.seed = seed;
    differing += generate(model, "Write something.", Model::kFixedSplitCount, params) != a;
  }
  CHECK(differing > 0);
}

TEST_CASE("a different reduction split flips some near-tied greedy choices - the same split none") {
  Model model;
  CHECK(Model::split_count_for_batch(1) == Model::kFixedSplitCount);
  CHECK(Model::split_count_for_batch(32) != Model::kFixedSplitCount);
  int differ_under_load = 0, differ_same_split = 0;
  for (int i = 0; i < 32; ++i) {
    std::string prompt = "Question " + std::to_string(i) + ": what should we do next?";
    auto alone = generate(model, prompt, Model::split_count_for_batch(1), greedy(64));
    auto batched = generate(model, prompt, Model::split_count_for_batch(32), greedy(64));
    auto again = generate(model, prompt, Model::kFixedSplitCount, greedy(64));
    differ_under_load += alone != batched;
    differ_same_split += alone != again;
  }
  CHECK(differ_under_load > 0);
  CHECK(differ_under_load < 32);  // most positions are not near-ties
  CHECK(differ_same_split == 0);
}

TEST_CASE("where batched outputs part - the two top logprobs were nearly tied") {
  Model model;
  int checked = 0;
  for (int i = 0; i < 32 && checked < 3; ++i) {
    std::string prompt = "Question " + std::to_string(i) + ": what should we do next?";
    SamplingParams params = greedy(64);
    params.top_logprobs = 2;
    Generation alone(model, model.tokenizer().encode(prompt), params);
    Generation batched(model, model.tokenizer().encode(prompt), params);
    while (!alone.finished() && !batched.finished()) {
      GeneratedToken a = alone.step(Model::split_count_for_batch(1));
      GeneratedToken b = batched.step(Model::split_count_for_batch(32));
      if (a.token != b.token) {
        REQUIRE(a.top.size() == 2);
        CHECK(a.top[0].logprob - a.top[1].logprob < 0.05f);
        ++checked;
        break;
      }
    }
  }
  CHECK(checked > 0);
}

TEST_CASE("max_tokens ends with length - a stop string ends with stop and is cut") {
  Model model;
  SamplingParams no_eos = greedy(5);
  no_eos.ignore_eos = true;
  Generation counted(model, model.tokenizer().encode("Hello"), no_eos);
  while (!counted.finished()) counted.step(Model::kFixedSplitCount);
  CHECK(counted.finish_reason() == FinishReason::length);
  CHECK(counted.tokens().size() == 5);

  // Pick a stop string from the unstopped text, so it certainly occurs.
  SamplingParams long_params = greedy(40);
  long_params.ignore_eos = true;
  Generation unstopped(model, model.tokenizer().encode("Hello"), long_params);
  while (!unstopped.finished()) unstopped.step(Model::kFixedSplitCount);
  std::string full(unstopped.text());
  REQUIRE(full.size() > 20);
  std::string stop = full.substr(10, 3);
  long_params.stop = {"never-there", stop};
  Generation stopped(model, model.tokenizer().encode("Hello"), long_params);
  std::string released;
  while (!stopped.finished()) {
    stopped.step(Model::kFixedSplitCount);
    released += stopped.take_releasable_text();
  }
  released += stopped.take_releasable_text();
  CHECK(stopped.finish_reason() == FinishReason::stop);
  CHECK(stopped.matched_stop() == stop);
  CHECK(std::string(stopped.text()) == full.substr(0, full.find(stop)));
  CHECK(released == stopped.text());
}

TEST_CASE("known answers load from JSONL and are generated verbatim - then stop") {
  AnswerBook book = AnswerBook::load(RETRACE_TEST_DATA "/sim-answers.jsonl");
  CHECK(book.size() == 3);
  REQUIRE(book.find_prompt("What is the capital of France?") != nullptr);
  CHECK(book.find_prompt("What is the capital of Spain?") == nullptr);
  std::vector<ChatMessage> messages{{"system", "Be brief."}, {"user", "Say hi"}};
  const std::string* answer = book.find_messages(messages);
  REQUIRE(answer != nullptr);
  CHECK(book.find_messages({{"user", "Say hi"}}) == nullptr);

  Model model;
  SamplingParams params = greedy(100);
  Generation generation(model, model.tokenizer().encode(render_chat(messages)), params,
                        model.tokenizer().encode(*answer));
  std::string streamed;
  while (!generation.finished()) {
    generation.step(Model::kFixedSplitCount);
    std::string_view piece = generation.take_releasable_text();
    streamed += piece;
  }
  streamed += generation.take_releasable_text();
  CHECK(std::string(generation.text()) == *answer);
  CHECK(streamed == *answer);
  CHECK(generation.finish_reason() == FinishReason::stop);
  CHECK(generation.tokens().back() == Tokenizer::kEndOfSequence);
}

TEST_CASE("a bad answers file is rejected naming the line") {
  std::string path = "sim_test_bad_answers.jsonl";
  {
    std::ofstream out(path);
    out << "{\"prompt\": \"a\", \"answer\": \"b\"}\n{\"prompt\": \"a\"}\n";
  }
  try {
    AnswerBook::load(path);
    FAIL("no error");
  } catch (const std::runtime_error& error) {
    CHECK(std::string(error.what()).find("line 2") != std::string::npos);
  }
  std::remove(path.c_str());
  CHECK_THROWS(AnswerBook::load("/nonexistent/answers.jsonl"));
}

TEST_CASE("malformed chat messages name the offending field") {
  std::string param, message;
  auto parsed = parse_chat_messages(boost::json::parse(R"([{"role":"user","content":"hi"},{"role":3}])"), param, message);
  CHECK(!parsed);
  CHECK(param == "messages[1].role");
  parsed = parse_chat_messages(boost::json::parse(R"("hello")"), param, message);
  CHECK(!parsed);
  CHECK(param == "messages");
}

TEST_CASE("tool messages must answer the calls of the assistant message before them") {
  std::string param, message;
  const std::string turn =
      R"([{"role":"user","content":"weather?"},{"role":"assistant","content":null,"tool_calls":[)"
      R"({"id":"a","type":"function","function":{"name":"w","arguments":"{}"}},)"
      R"({"id":"b","type":"function","function":{"name":"w","arguments":"{}"}}]})";
  auto paired = parse_chat_messages(boost::json::parse(
      turn + R"(,{"role":"tool","tool_call_id":"b","content":"1"},{"role":"tool","tool_call_id":"a","content":"2"},)"
             R"({"role":"user","content":"thanks"}])"), param, message);
  CHECK(paired);
  // An id no call has (a conversation re-sent with its ids out of step).
  auto stray = parse_chat_messages(boost::json::parse(
      turn + R"(,{"role":"tool","tool_call_id":"a","content":"1"},{"role":"tool","tool_call_id":"z","content":"2"}])"),
      param, message);
  CHECK(!stray);
  CHECK(param == "messages[3].tool_call_id");
  CHECK(message.find("('z')") != std::string::npos);
  // A call left unanswered before the conversation goes on, or at its end.
  auto unanswered = parse_chat_messages(boost::json::parse(
      turn + R"(,{"role":"tool","tool_call_id":"a","content":"1"},{"role":"user","content":"and?"}])"), param, message);
  CHECK(!unanswered);
  CHECK(param == "messages[1].tool_calls");
  CHECK(message.find("not answered: 'b'") != std::string::npos);
  CHECK(!parse_chat_messages(boost::json::parse(turn + "]"), param, message));
}

TEST_CASE("image_url content parts are accepted and their bytes count as prompt") {
  std::string param, message;
  const std::string image = R"({"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}})";
  auto with_image = parse_chat_messages(
      boost::json::parse(R"([{"role":"user","content":[{"type":"text","text":"What is this?"},)" + image + "]}]"),
      param, message);
  REQUIRE(with_image);
  auto text_only = parse_chat_messages(
      boost::json::parse(R"([{"role":"user","content":[{"type":"text","text":"What is this?"}]}])"), param, message);
  REQUIRE(text_only);
  const std::string& content = (*with_image)[0].content;
  CHECK(content.rfind("What is this?", 0) == 0);
  CHECK(content.size() == (*text_only)[0].content.size() + image.size());
  // A part that is neither text nor a typed media part is still refused, naming the field.
  auto bad = parse_chat_messages(boost::json::parse(R"([{"role":"user","content":[{"text":5}]}])"), param, message);
  CHECK(!bad);
  CHECK(param == "messages[0].content");
}
