// What redacting a recorded request's body costs (record's trace thread does it for every
// exchange): redact_json_body() on chat bodies of 200 B to a 175 KB prompt that names no secret
// (the common case: the body is kept byte for byte), CPU per body and per byte; then an agent's
// body, a chat whose tool calls' arguments and tool results are JSON inside strings (escaped
// quotes: always parsed), of 2 KB to 175 KB, also without a secret.
//
// Usage: redaction_bench   (e.g. taskset -c 1 build/release/bench/redaction_bench)
#include <time.h>

#include <cstdio>
#include <random>
#include <string>

#include "bench/thread_cpu.hpp"
#include "format/redaction.hpp"
#include "llm/derive_tokens.hpp"

int main() {
  retrace::llm::install_token_deriver();  // format 1.7 (format/token_deriver.hpp)
  // Words a prompt has, some of them the letters secret names are made of.
  const char* words[] = {"the",      "sea",   "prompt",  "people",  "apple",   "paper",   "story",   "about",
                         "with",     "past",  "computer", "token",  "passage", "keyword", "shipping"};
  std::mt19937 random(1);
  std::string text;
  while (text.size() < 175'000) {
    text += words[random() % std::size(words)];
    text += ' ';
  }
  const std::string whole = R"({"model":"m","messages":[{"role":"system","content":"You are helpful."},)"
                            R"({"role":"user","content":")" + text + R"("}],"max_tokens":16,"stream":true})";
  for (std::size_t size : {200ul, 2'000ul, 20'000ul, whole.size()}) {
    const std::string body = size < whole.size() ? whole.substr(0, size - 4) + "\"}]}" : whole;
    const int rounds = size < 10'000 ? 20'000 : 200;
    std::size_t kept = 0;
    const double start = retrace::bench::thread_cpu_seconds();
    for (int i = 0; i < rounds; ++i) kept += retrace::redact_json_body(body) == body;
    const double seconds = retrace::bench::thread_cpu_seconds() - start;
    std::printf("%7zu bytes: %9.2f us per body, %6.2f ns per byte (%d of %d kept byte for byte)\n", body.size(),
                seconds * 1e6 / rounds, seconds * 1e9 / rounds / static_cast<double>(body.size()),
                static_cast<int>(kept), rounds);
  }
  // An agent's turn: turns of a tool call (its arguments a string of JSON) and the tool's result (a
  // string of JSON holding the prompt's words), until the body reaches the size.
  for (std::size_t size : {2'000ul, 20'000ul, 175'000ul}) {
    std::string messages = R"([{"role":"user","content":"Find the sea stories."})";
    std::size_t turn = 0;
    while (messages.size() < size) {
      const auto id = std::to_string(turn++);
      const auto words = text.substr((turn * 997) % 100'000, 600);
      messages += R"(,{"role":"assistant","tool_calls":[{"id":"c)" + id +
                  R"(","type":"function","function":{"name":"search","arguments":"{\"query\":\"sea\",\"page\":)" + id +
                  R"(}"}}]},{"role":"tool","tool_call_id":"c)" + id + R"(","content":"{\"results\":[{\"title\":\")" +
                  words + R"(\",\"score\":0.5}]}"})";
    }
    const std::string body = R"({"model":"m","messages":)" + messages + R"(],"max_tokens":16})";
    const int rounds = size < 10'000 ? 5'000 : 100;
    std::size_t kept = 0;
    const double start = retrace::bench::thread_cpu_seconds();
    for (int i = 0; i < rounds; ++i) kept += retrace::redact_json_body(body) == body;
    const double seconds = retrace::bench::thread_cpu_seconds() - start;
    std::printf("%7zu bytes of tool turns: %9.2f us per body, %6.2f ns per byte (%d of %d kept byte for byte)\n",
                body.size(), seconds * 1e6 / rounds, seconds * 1e9 / rounds / static_cast<double>(body.size()),
                static_cast<int>(kept), rounds);
  }
  return 0;
}
