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

TEST_CASE("live sessions replace the latest assistant messages with this run's answers") {
  auto body = R"({"messages":[{"role":"system","content":"s"},{"role":"assistant","content":"old0"},)"
              R"({"role":"user","content":"u1"},{"role":"assistant","content":"rec1"},)"
              R"({"role":"user","content":"u2"},{"role":"assistant","content":"rec2"},)"
              R"({"role":"user","content":"u3"}]})";
  auto out = json::parse(substitute_session_answers(body, {std::string("new1"), std::string("new2")}));
  auto& messages = out.at("messages").as_array();
  CHECK(messages[1].at("content").as_string() == "old0");  // before the replayed turns
  CHECK(messages[3].at("content").as_string() == "new1");
  CHECK(messages[5].at("content").as_string() == "new2");
  CHECK(messages[6].at("content").as_string() == "u3");
  // A failed turn keeps its recorded answer.
  auto kept = json::parse(substitute_session_answers(body, {std::nullopt, std::string("new2")}));
  CHECK(kept.at("messages").at(3).at("content").as_string() == "rec1");
  CHECK(substitute_session_answers(R"({"prompt":"x"})", {std::string("a")}) == R"({"prompt":"x"})");
}

TEST_CASE("live sessions send an answer cut inside a character as valid text") {
  auto body = R"({"messages":[{"role":"user","content":"u1"},{"role":"assistant","content":"rec1"},)"
              R"({"role":"user","content":"u2"}]})";
  // Token bytes of an answer stopped by max_tokens inside an emoji (F0 9F 98 80), and one with a
  // stray byte inside.
  const std::string cut = "ok \xF0\x9F\x98";
  const std::string stray = "a\xFF" "b";
  auto sent = substitute_session_answers(body, {cut});
  CHECK(is_valid_utf8(sent));
  CHECK(json::parse(sent).at("messages").at(1).at("content").as_string() == "ok ");
  sent = substitute_session_answers(body, {stray});
  CHECK(is_valid_utf8(sent));
  CHECK(json::parse(sent).at("messages").at(1).at("content").as_string() == "a\xEF\xBF\xBD" "b");
  // Whole characters pass as they are.
  sent = substitute_session_answers(body, {std::string("caf\xC3\xA9 \xF0\x9F\x98\x80")});
  CHECK(json::parse(sent).at("messages").at(1).at("content").as_string() == "caf\xC3\xA9 \xF0\x9F\x98\x80");
}
