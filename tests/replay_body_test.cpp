// Unit tests of replay/'s body rewriting: --set and --unset at dotted paths, and live sessions' answers.
#include <catch2/catch.hpp>

#include <boost/json.hpp>
#include <string>

#include "base/text.hpp"
#include "replay/replay.hpp"

using namespace retrace;
using namespace retrace::replay;
namespace json = boost::json;

TEST_CASE("set writes JSON values at dotted paths - creating objects on the way") {
  auto body = R"({"model":"m","temperature":0.7,"messages":[{"role":"user","content":"hi"}]})";
  auto out = json::parse(apply_body_overrides(
      body,
      {{"temperature", "0"},
       {"stream_options.include_usage", "true"},
       {"messages.0.content", "hello there"},
       {"stop", "[\"\\n\"]"},
       {"user", "\"42\""}},
      {}));
  CHECK(out.at("temperature").as_int64() == 0);
  CHECK(out.at("stream_options").at("include_usage").as_bool());
  CHECK(out.at("messages").at(0).at("content").as_string() == "hello there");
  CHECK(out.at("stop").at(0).as_string() == "\n");
  CHECK(out.at("user").as_string() == "42");
  CHECK(out.at("model").as_string() == "m");
}

TEST_CASE("unset removes a path and ignores one that is absent") {
  auto body = R"({"model":"m","logprobs":true,"stream_options":{"include_usage":true,"x":1}})";
  auto out = json::parse(apply_body_overrides(
      body, {}, {"logprobs", "stream_options.include_usage", "not.there", "seed"}));
  CHECK_FALSE(out.as_object().contains("logprobs"));
  CHECK_FALSE(out.at("stream_options").as_object().contains("include_usage"));
  CHECK(out.at("stream_options").at("x").as_int64() == 1);
}

TEST_CASE("body overrides refuse bodies that are not JSON objects and paths through scalars") {
  CHECK_THROWS_AS(apply_body_overrides("not json", {{"a", "1"}}, {}), std::invalid_argument);
  CHECK_THROWS_AS(apply_body_overrides("[1,2]", {{"a", "1"}}, {}), std::invalid_argument);
  CHECK_THROWS_AS(apply_body_overrides(R"({"a":5})", {{"a.b", "1"}}, {}), std::invalid_argument);
  CHECK_THROWS_AS(apply_body_overrides(R"({"a":1})", {{"a..b", "1"}}, {}), std::invalid_argument);
  // No overrides: the bytes go out untouched, JSON or not.
  CHECK(apply_body_overrides("not json", {}, {}) == "not json");
}

namespace {
// This run's answer to a turn that answered with text only.
std::optional<SessionAnswer> text(std::string content) { return SessionAnswer{std::move(content), {}}; }
std::string sent_body(std::string_view body, const std::vector<std::optional<SessionAnswer>>& answers) {
  return substitute_session_answers(body, answers).body;
}
}  // namespace

TEST_CASE("live sessions replace the latest assistant messages with this run's answers") {
  auto body = R"({"messages":[{"role":"system","content":"s"},{"role":"assistant","content":"old0"},)"
              R"({"role":"user","content":"u1"},{"role":"assistant","content":"rec1"},)"
              R"({"role":"user","content":"u2"},{"role":"assistant","content":"rec2"},)"
              R"({"role":"user","content":"u3"}]})";
  auto out = json::parse(sent_body(body, {text("new1"), text("new2")}));
  auto& messages = out.at("messages").as_array();
  CHECK(messages[1].at("content").as_string() == "old0");  // before the replayed turns
  CHECK(messages[3].at("content").as_string() == "new1");
  CHECK(messages[5].at("content").as_string() == "new2");
  CHECK(messages[6].at("content").as_string() == "u3");
  // A failed turn keeps its recorded answer.
  auto kept = json::parse(sent_body(body, {std::nullopt, text("new2")}));
  CHECK(kept.at("messages").at(3).at("content").as_string() == "rec1");
  CHECK(sent_body(R"({"prompt":"x"})", {text("a")}) == R"({"prompt":"x"})");
  CHECK(substitute_session_answers(body, {text("new1")}).newest == ToolTurn::none);
}

TEST_CASE("live sessions send an answer cut inside a character as valid text") {
  auto body = R"({"messages":[{"role":"user","content":"u1"},{"role":"assistant","content":"rec1"},)"
              R"({"role":"user","content":"u2"}]})";
  // Token bytes of an answer stopped by max_tokens inside an emoji (F0 9F 98 80), and one with a
  // stray byte inside.
  const std::string cut = "ok \xF0\x9F\x98";
  const std::string stray = "a\xFF" "b";
  auto sent = sent_body(body, {text(cut)});
  CHECK(is_valid_utf8(sent));
  CHECK(json::parse(sent).at("messages").at(1).at("content").as_string() == "ok ");
  sent = sent_body(body, {text(stray)});
  CHECK(is_valid_utf8(sent));
  CHECK(json::parse(sent).at("messages").at(1).at("content").as_string() == "a\xEF\xBF\xBD" "b");
  // Whole characters pass as they are.
  sent = sent_body(body, {text("caf\xC3\xA9 \xF0\x9F\x98\x80")});
  CHECK(json::parse(sent).at("messages").at(1).at("content").as_string() == "caf\xC3\xA9 \xF0\x9F\x98\x80");
}

namespace {
// A conversation with one tool turn: two recorded calls, their two results, and the answer after.
constexpr const char* kToolConversation =
    R"({"messages":[{"role":"user","content":"weather in Paris and Rome?"},)"
    R"({"role":"assistant","content":null,"tool_calls":[)"
    R"({"id":"rec-a","type":"function","function":{"name":"weather","arguments":"{\"city\": \"Paris\"}"}},)"
    R"({"id":"rec-b","type":"function","function":{"name":"weather","arguments":"{\"city\": \"Rome\"}"}}]},)"
    R"({"role":"tool","tool_call_id":"rec-b","content":"rain"},)"
    R"({"role":"tool","tool_call_id":"rec-a","content":"sun"},)"
    R"({"role":"assistant","content":"Sun in Paris, rain in Rome."},)"
    R"({"role":"user","content":"and tomorrow?"}]})";

SessionAnswer calls(std::string content, std::vector<SessionCall> made) { return {std::move(content), std::move(made)}; }
}  // namespace

TEST_CASE("live sessions send a tool turn with this run's calls and the tool messages re-pointed to their ids") {
  // The same calls (arguments equal as JSON, spaced otherwise), under this run's ids.
  auto now = calls("", {{"run-1", "weather", R"({"city":"Paris"})"}, {"run-2", "weather", R"({"city":"Rome"})"}});
  auto sent = substitute_session_answers(kToolConversation, {now, text("Sunny and rainy.")});
  CHECK(sent.newest == ToolTurn::none);  // the newest answer is the text after the results
  const auto sent_json = json::parse(sent.body);
  const auto& messages = sent_json.at("messages").as_array();
  const auto& turn = messages[1].as_object();
  CHECK(turn.at("content").is_null());
  REQUIRE(turn.at("tool_calls").as_array().size() == 2);
  CHECK(turn.at("tool_calls").at(0).at("id").as_string() == "run-1");
  CHECK(turn.at("tool_calls").at(1).at("id").as_string() == "run-2");
  CHECK(turn.at("tool_calls").at(0).at("function").at("arguments").as_string() == R"({"city":"Paris"})");
  CHECK(turn.at("tool_calls").at(1).at("type").as_string() == "function");
  // Each result still pairs with its call, whatever order the results came in.
  CHECK(messages[2].at("tool_call_id").as_string() == "run-2");
  CHECK(messages[2].at("content").as_string() == "rain");
  CHECK(messages[3].at("tool_call_id").as_string() == "run-1");
  CHECK(messages[4].at("content").as_string() == "Sunny and rainy.");
  // Counted once, when the turn right after the tool turn is sent.
  auto first = std::string(kToolConversation);
  first = first.substr(0, first.find(R"(,{"role":"assistant","content":"Sun)")) + "]}";
  CHECK(substitute_session_answers(first, {now}).newest == ToolTurn::substituted);
  // A call the server gave no id keeps the recorded one.
  auto unnamed = calls("", {{"", "weather", R"({"city":"Paris"})"}, {"", "weather", R"({"city":"Rome"})"}});
  auto kept_ids = json::parse(sent_body(first, {unnamed}));
  CHECK(kept_ids.at("messages").at(1).at("tool_calls").at(0).at("id").as_string() == "rec-a");
  CHECK(kept_ids.at("messages").at(3).at("tool_call_id").as_string() == "rec-a");
}

TEST_CASE("live sessions keep a tool turn as recorded when this run called otherwise") {
  auto first = std::string(kToolConversation);
  first = first.substr(0, first.find(R"(,{"role":"assistant","content":"Sun)")) + "]}";
  const auto recorded = json::parse(first);
  for (const auto& now : {calls("", {{"run-1", "weather", R"({"city":"Paris"})"}}),  // one call of two
                          calls("", {{"run-1", "weather", R"({"city":"Lyon"})"}, {"run-2", "weather", R"({"city":"Rome"})"}}),
                          calls("", {{"run-1", "forecast", R"({"city":"Paris"})"}, {"run-2", "weather", R"({"city":"Rome"})"}}),
                          calls("I cannot look that up.", {})}) {  // no call at all
    auto sent = substitute_session_answers(first, {now});
    CHECK(sent.newest == ToolTurn::kept);
    CHECK(json::parse(sent.body) == recorded);
  }
  // A text turn this run answered with a call: the trace has no result for it.
  auto text_turn = R"({"messages":[{"role":"user","content":"u1"},{"role":"assistant","content":"rec1"},)"
                   R"({"role":"user","content":"u2"}]})";
  auto sent = substitute_session_answers(text_turn, {calls("", {{"run-1", "weather", "{}"}})});
  CHECK(sent.newest == ToolTurn::kept);
  CHECK(json::parse(sent.body).at("messages").at(1).at("content").as_string() == "rec1");
  // An Anthropic tool_use turn pairs with tool_result blocks: kept whole.
  auto anthropic = R"({"messages":[{"role":"user","content":"u1"},{"role":"assistant","content":[)"
                   R"({"type":"tool_use","id":"toolu_1","name":"weather","input":{"city":"Paris"}}]},)"
                   R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"sun"}]}]})";
  auto kept = substitute_session_answers(anthropic, {calls("", {{"toolu_9", "weather", R"({"city":"Paris"})"}})});
  CHECK(kept.newest == ToolTurn::kept);
  CHECK(json::parse(kept.body) == json::parse(anthropic));
}

namespace {
Token token_of(std::string bytes) {
  Token token;
  token.bytes = std::move(bytes);
  return token;
}
}  // namespace

TEST_CASE("a session answer is the first choice's content and its calls with the server's ids") {
  std::vector<Choice> choices(4);
  choices[0].part = Part::reasoning;
  choices[0].tokens.push_back(token_of("thinking"));
  choices[1].tokens.push_back(token_of("ok"));  // content
  choices[2].part = Part::tool_call;
  choices[2].tool_call = 0;
  choices[2].tool_name = "weather";
  choices[2].tokens.push_back(token_of(R"({"city":)"));
  choices[2].tokens.push_back(token_of(R"("Paris"})"));
  choices[3].index = 1;  // another choice (n=2): not the answer
  auto answer = session_answer(choices, {{0, 0, "call-7"}, {1, 0, "call-8"}});
  REQUIRE(answer);
  CHECK(answer->content == "ok");
  REQUIRE(answer->calls.size() == 1);
  CHECK(answer->calls[0] == SessionCall{"call-7", "weather", R"({"city":"Paris"})"});
  CHECK_FALSE(session_answer({}, {}));
}
