// record/sampling.hpp: which sessions --sample keeps.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "record/sampling.hpp"

using namespace retrace::record;

TEST_CASE("The first user message is found in chat and Responses and completions bodies") {
  CHECK(first_user_message(R"({"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi there"},{"role":"user","content":"later"}]})") ==
        "hi there");
  CHECK(first_user_message(R"({"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}]})") ==
        R"([{"type":"text","text":"a"}])");
  CHECK(first_user_message(R"({"input":"what is 2+2"})") == "what is 2+2");
  CHECK(first_user_message(R"({"input":[{"role":"user","content":"q"}]})") == "q");
  CHECK(first_user_message(R"({"prompt":"Once upon"})") == "Once upon");
  CHECK(first_user_message(R"({"model":"m"})").empty());
  CHECK(first_user_message("not json").empty());
  CHECK(first_user_message("").empty());
}

TEST_CASE("Every turn of a chat shares its session and so its decision") {
  SessionSampler sampler(0.5, 3);
  for (int i = 0; i < 200; ++i) {
    std::string first = R"({"role":"user","content":"conversation )" + std::to_string(i) + R"("})";
    auto one = sampler.keeps_request("", "POST", "/v1/chat/completions", R"({"messages":[)" + first + "]}");
    auto three = sampler.keeps_request("", "POST", "/v1/chat/completions",
                                       R"({"messages":[)" + first +
                                           R"(,{"role":"assistant","content":"x"},{"role":"user","content":"more"}]})");
    CHECK(one == three);
  }
}

TEST_CASE("A session header decides before the body") {
  SessionSampler sampler(0.5, 9);
  int kept = 0;
  for (int i = 0; i < 100; ++i) {
    auto name = "s" + std::to_string(i);
    bool by_name = sampler.keeps(name);
    CHECK(sampler.keeps_request(name, "POST", "/x", R"({"prompt":"a"})") == by_name);
    CHECK(sampler.keeps_request(name, "POST", "/x", R"({"prompt":"b"})") == by_name);
    kept += by_name;
  }
  CHECK(kept > 0);
  CHECK(kept < 100);
}

TEST_CASE("The kept fraction follows the sample and the seed and a larger fraction keeps a superset") {
  SessionSampler all(1.0, 0), none(0.0, 0), tenth(0.1, 1), third(0.3, 1), other_seed(0.3, 2);
  int kept_tenth = 0, kept_third = 0, differ = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    auto name = "session-" + std::to_string(i);
    CHECK(all.keeps(name));
    CHECK_FALSE(none.keeps(name));
    bool a = tenth.keeps(name), b = third.keeps(name);
    if (a) CHECK(b);
    kept_tenth += a;
    kept_third += b;
    differ += b != other_seed.keeps(name);
  }
  // Within 5 standard deviations of n p.
  CHECK(std::abs(kept_tenth - 10000) < 5 * 95);
  CHECK(std::abs(kept_third - 30000) < 5 * 145);
  CHECK(differ > 10000);  // another seed keeps other sessions
}
