// The decoder's SAX fast path must decode exactly as the general DOM path: on every sample stream,
// on simple events and their near misses, on events with logprobs in both OpenAI shapes (legacy
// completions and chat), and on thousands of mutations of each.
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "llm/llm.hpp"
#include "tests/test_data.hpp"

using namespace retrace;
using namespace retrace::llm;
using retrace::testing::read_data;

namespace {

// Decodes what `feed` gives a decoder with the fast path on and off; both results must be equal.
// Returns how many events (or bodies) the fast path decoded.
template <class Feed>
std::size_t check_decoders_agree(Dialect dialect, Feed feed) {
  ResponseDecoder fast(dialect);
  ResponseDecoder general(dialect, false);
  feed(fast);
  feed(general);
  Exchange from_fast;
  Exchange from_general;
  fast.finish(from_fast);
  general.finish(from_general);
  CHECK(fast.finished() == general.finished());
  CHECK(from_fast == from_general);
  CHECK(general.fast_path_events() == 0);
  return fast.fast_path_events();
}

// `events` (SSE data strings) as one stream.
std::size_t check_paths_agree(const std::vector<std::string>& events, Dialect dialect) {
  return check_decoders_agree(dialect, [&](ResponseDecoder& decoder) {
    std::int64_t offset = 0;
    for (const std::string& data : events) decoder.on_event(data, offset += 1000);
  });
}

// One to four random edits of `text`: a byte replaced by one JSON cares about, a run erased, or a
// run of itself inserted elsewhere. Never leaves it empty.
void mutate(std::string& text, std::mt19937_64& random) {
  static const std::string interesting = "{}[]\":,0-1e.\\u \xff" "nulltruefalse";
  const int mutations = 1 + static_cast<int>(random() % 4);
  for (int m = 0; m < mutations; ++m) {
    const std::size_t at = random() % text.size();
    switch (random() % 3) {
      case 0: text[at] = interesting[random() % interesting.size()]; break;
      case 1: text.erase(at, 1 + random() % 8); break;
      case 2: text.insert(at, text.substr(random() % text.size(), random() % 32)); break;
    }
    if (text.empty()) text = "{";
  }
}

std::vector<std::string> event_data_of(std::string_view stream) {
  std::vector<std::string> data;
  SseParser parser;
  parser.feed(stream, [&](const SseEvent& event) { data.emplace_back(event.data); });
  return data;
}

}  // namespace

TEST_CASE("Fast and general decoding agree on every sample stream in every dialect") {
  const char* streams[] = {"llamacpp/completion-native-stream.sse", "llamacpp/v1-chat-completions-stream.sse",
                           "llamacpp/v1-completions-stream-logprobs.sse", "llamacpp/v1-completions-stream.sse",
                           "openai/chat-stream-logprobs.sse", "sglang/chat-stream-reasoning.sse",
                           "sglang/chat-stream-tool-calls.sse", "sim/completions-stream-logprobs.sse",
                           "sim/chat-stream-logprobs.sse", "tgi/chat-stream.sse",
                           "tgi/chat-stream-tool-calls.sse", "tgi/generate-stream.sse",
                           "vllm/chat-stream-reasoning.sse", "vllm/chat-stream-tool-calls.sse",
                           "vllm/chat-stream-token-ids.sse", "vllm/completions-stream-n2.sse",
                           "vllm/completions-stream-token-ids.sse"};
  const Dialect dialects[] = {Dialect::unknown, Dialect::openai_completions, Dialect::openai_chat,
                              Dialect::llamacpp_completion, Dialect::tgi_generate};
  for (const char* name : streams) {
    const auto events = event_data_of(read_data(name));
    for (Dialect dialect : dialects) {
      INFO(name << " as " << to_string(dialect));
      check_paths_agree(events, dialect);
    }
  }
}

TEST_CASE("Fast and general decoding agree on simple events and on each near miss") {
  // Each line is one event; each list one stream. Near misses are shapes the fast path must hand
  // over (or read) exactly as the general parse does.
  const std::vector<std::vector<std::string>> streams = {
      {R"({"id":"c","object":"text_completion","choices":[{"index":0,"text":" a","logprobs":null,"finish_reason":null}]})",
       R"({"choices":[{"index":0,"text":"","finish_reason":"length","stop_reason":null}],"usage":null})", "[DONE]"},
      {R"({"choices":[{"index":1,"text":"x"},{"index":0,"text":"y"},{"text":"z"}]})",
       R"({"choices":[{"index":null,"text":"n"},7,"s",null,[1,{"text":"no"}],{"index":1,"text":null}]})"},
      {R"({"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null}]})",
       R"({"choices":[{"index":0,"delta":{"content":" Time"},"finish_reason":null}]})",
       R"({"choices":[{"index":0,"delta":{"content":null}}]})",
       R"({"choices":[{"index":0,"delta":{},"message":{"content":"m"}}]})",
       R"({"choices":[{"index":0,"delta":null,"message":{"content":"m2"}}]})",
       R"({"choices":[{"index":0,"message":{"content":"m3"},"text":"t"}]})",
       R"({"choices":[{"index":0,"text":"t2","delta":7}]})",
       R"({"choices":[{"index":0,"delta":{"content":5,"role":"x"}}]})"},
      {R"({"choices":[{"index":0,"delta":{"content":"a","reasoning_content":"think"}}]})",
       R"({"choices":[{"index":0,"delta":{"content":"b","reasoning_content":null,"refusal":null,"tool_calls":null}}]})",
       R"({"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"name":"f","arguments":"{}"}}]}}]})",
       R"({"choices":[{"index":0,"delta":{"refusal":"no","content":"c"}}]})",
       R"({"choices":[{"index":0,"delta":{"reasoning":"r"}}]})"},
      {R"({"choices":[{"index":0,"text":"a","logprobs":{"tokens":["a"],"token_logprobs":[-0.5]}}]})",
       R"({"choices":[{"index":0,"text":"b","token_ids":[5]}]})",
       R"({"choices":[{"index":0,"text":"c","token_ids":null,"logprobs":7}]})",
       R"({"choices":[{"index":0,"text":"d","logprobs":{"content":[]}}]})"},
      {R"({"choices":[{"index":-1,"text":"neg"}]})", R"({"choices":[{"index":4096,"text":"big"}]})",
       R"({"choices":[{"index":18446744073709551615,"text":"huge"}]})", R"({"choices":[{"index":1.0,"text":"real"}]})",
       R"({"choices":[{"index":"0","text":"str"}]})", R"({"choices":[{"index":true,"text":"bool"}]})",
       R"({"choices":[{"index":4095,"text":"edge"}]})"},
      {R"({"choices":[{"index":0,"text":"a"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}})",
       R"({"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}})",
       R"({"usage":null})", R"({"id":"x"})", R"({"choices":{"0":{"text":"obj"}}})", R"({"choices":"none"})",
       R"({"choices":[{"text":"u"}],"usage":[1]})", R"({"choices":[{"text":"u2"}],"usage":"n/a"})"},
      {R"({"error":{"message":"overloaded"}})", R"({"object":"error","message":"bad"})",
       R"({"choices":[{"text":"e"}],"error":null})", R"({"choices":[{"text":"e2"}],"error":"boom"})",
       R"({"choices":[{"text":"e3"}],"error":0})", R"({"choices":[{"text":"o"}],"object":"chat.completion.chunk"})",
       R"({"object":7,"choices":[{"text":"o2"}]})"},
      {R"({"choices":[{"text":"dup","text":"licate"}]})", R"({"choices":[{"text":"a"}],"choices":[{"text":"b"}]})",
       R"({"choices":[{"delta":{"content":"x","content":"y"}}]})",
       R"({"choices":[{"index":0,"finish_reason":"stop","finish_reason":"length"}]})",
       R"({"x":1,"x":2,"choices":[{"y":[1,2],"y":{"z":3},"text":"ok"}]})"},
      {R"({"choices":[{"text":"esc\"aped \\ \u00e9 \ud83d\ude00 \n"}]})", "{\"choices\":[{\"text\":\"raw \xff\xfe bytes\"}]}",
       R"({"choices":[{"finish_reason":7,"text":"f"},{"index":2,"finish_reason":{"a":1}}]})",
       R"({"nested":{"choices":[{"text":"deep"}],"a":[[[{}]]]},"choices":[{"other":{"text":"no"},"text":"yes"}]})"},
      {R"({"choices":[{"text":"a"}]} )", R"({"choices":[{"text":"a"}]} x)", R"({"choices":[{"text":"a"}])",
       R"([{"choices":[{"text":"arr"}]}])", R"("string")", "7", "null", "true", "{}", R"({"choices":[{"text":"ok"}]})",
       R"({"choices":[{"text":"a"}],})", R"({"choices":[{"text":"a"}]}/*c*/)"},
      {std::string(70, '[') + std::string(70, ']'),
       R"({"a":)" + std::string(70, '[') + std::string(70, ']') + R"(,"choices":[{"text":"deep"}]})"},
      {R"({"choices":[{"text":"before"}]})", "[DONE]", R"({"choices":[{"text":"after"}]})"},
      // Three events in a row the fast path gives up on turn it off for the rest of the stream.
      {R"({"choices":[{"index":0,"text":"a","reasoning":"r","delta":{"reasoning":"r"}}]})",
       R"({"choices":[{"index":0,"text":"b","delta":{"reasoning":"r"}}]})",
       R"({"choices":[{"text":"c"}]})",
       R"({"choices":[{"index":0,"text":"d","delta":{"reasoning":"s"}}]})",
       R"({"choices":[{"index":0,"text":"e","delta":{"reasoning":"t"}}]})",
       R"({"choices":[{"index":0,"text":"f","delta":{"reasoning":"u"}}]})",
       R"({"choices":[{"text":"g"}]})", R"({"choices":[{"index":0,"text":"h","finish_reason":"length"}]})", "[DONE]"},
  };
  const Dialect dialects[] = {Dialect::unknown, Dialect::openai_completions, Dialect::openai_chat,
                              Dialect::llamacpp_completion, Dialect::tgi_generate};
  for (std::size_t s = 0; s < streams.size(); ++s) {
    for (Dialect dialect : dialects) {
      INFO("stream " << s << " as " << to_string(dialect));
      check_paths_agree(streams[s], dialect);
      for (const std::string& event : streams[s]) {
        INFO("event alone: " << event);
        check_paths_agree({event}, dialect);
      }
    }
  }
  // Strings long enough that the parser hands them over in parts.
  const std::string long_text(20000, 'w');
  check_paths_agree({R"({"choices":[{"text":")" + long_text + R"(","finish_reason":")" + long_text + R"("}]})"},
                    Dialect::openai_completions);
  check_paths_agree({R"({"choices":[{"delta":{"content":")" + long_text + R"("}}],")" + long_text + R"(":1})"},
                    Dialect::openai_chat);
}

TEST_CASE("Fast and general decoding agree on mutated simple events") {
  const std::string simple =
      R"({"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" word","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null})";
  const std::string chat =
      R"({"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":" hi"},"logprobs":null,"finish_reason":"stop"}]})";
  std::mt19937_64 random(1129);  // fixed seed: a failure reproduces
  for (int round = 0; round < 2000; ++round) {
    std::string event = round % 2 ? simple : chat;
    mutate(event, random);
    INFO(event);
    check_paths_agree({simple, event, chat}, round % 3 ? Dialect::openai_completions : Dialect::openai_chat);
  }
}

// ---------------------------------------------------------------------------------------------
// Events with logprobs: the fast path reads both OpenAI shapes and gives the DOM path's tokens.

namespace {

const Dialect kOpenAiDialects[] = {Dialect::unknown, Dialect::openai_completions, Dialect::openai_chat};

// Each event alone and the whole list as one stream agree; returns how many of the events alone
// the fast path read (as openai_completions).
std::size_t check_each_and_all(const std::vector<std::string>& events) {
  std::size_t read_fast = 0;
  for (Dialect dialect : kOpenAiDialects) {
    INFO("as " << to_string(dialect));
    check_paths_agree(events, dialect);
    for (const std::string& event : events) {
      INFO("event alone: " << event);
      const std::size_t fast = check_paths_agree({event}, dialect);
      if (dialect == Dialect::openai_completions) read_fast += fast;
    }
  }
  return read_fast;
}

std::string completion(const std::string& text_and_logprobs) {
  return R"({"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,)" +
         text_and_logprobs + R"(,"finish_reason":null}]})";
}
std::string chat(const std::string& delta_and_logprobs) {
  return R"({"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,)" + delta_and_logprobs +
         R"(,"finish_reason":null}]})";
}

}  // namespace

TEST_CASE("The fast path reads legacy completions logprobs as the general path does") {
  const std::vector<std::string> read = {
      // retrace serve's and vLLM's shape, one token per event.
      completion(R"("text":" the","logprobs":{"tokens":[" the"],"token_logprobs":[-0.5],"top_logprobs":[{" the":-0.5," a":-1.25,"x":-0.75}],"text_offset":[10]})"),
      // Several tokens split by text_offset (code points, not bytes), and by their own texts.
      completion(R"("text":"h\u00e9llo","logprobs":{"tokens":["token_id:1","token_id:2"],"token_logprobs":[-1,-2],"top_logprobs":[{"token_id:1":-1},{"token_id:2":-2,"token_id:3":-2.5}],"text_offset":[4,6]})"),
      completion(R"("text":"ab","logprobs":{"tokens":["a","b"],"token_logprobs":[-1,-2],"text_offset":[0,1]})"),
      completion(R"("text":"ab","logprobs":{"tokens":["token_id:1","token_id:2"],"token_logprobs":[-1,-2],"text_offset":[5,3]})"),
      completion(R"("text":"ab","logprobs":{"tokens":["token_id:1","token_id:2"],"token_logprobs":[-1,-2],"text_offset":[0,1.0]})"),
      completion(R"("text":"ab","logprobs":{"tokens":["token_id:1","token_id:2"],"token_logprobs":[-1,-2],"text_offset":[0,"1"]})"),
      completion(R"("text":"ab","logprobs":{"tokens":["token_id:1","token_id:2"],"token_logprobs":[-1,-2],"text_offset":[0,9]})"),
      completion(R"("text":"ab","logprobs":{"tokens":["token_id:1","token_id:2"],"text_offset":null})"),
      // tiktoken's pieces of a character, escapes and unicode in tokens and labels.
      completion(R"("text":"\ud83d\ude00","logprobs":{"tokens":["bytes:\\xf0\\x9f","bytes:\\x98\\x80"],"token_logprobs":[-0.1,-0.2],"top_logprobs":[{"bytes:\\xf0\\x9f":-0.1,"\ud83d\ude00":-3},{"bytes:\\x98\\x80":-0.2,"bytes:\\xZZ":-4}],"text_offset":[0,1]})"),
      completion(R"("text":"\"q\"\n\\","logprobs":{"tokens":["\"q\"","\n\\"],"token_logprobs":[-1,-2],"top_logprobs":[{"\"q\"":-1,"\u00e9\t":-2},{"\n\\":-2}]})"),
      // Nulls, missing and extra elements, values of other types.
      completion(R"("text":"x","logprobs":{"tokens":[null,5,"x",[1],{"a":1},true],"token_logprobs":[null,"s",-1,[2],{},1e400],"top_logprobs":[null,{"a":null,"b":"s","c":{},"d":[1],"e":true,"f":-2},[],3]})"),
      completion(R"("text":"x","logprobs":{"tokens":["x"]})"),
      completion(R"("text":"x","logprobs":{"tokens":["x"],"token_logprobs":[-1,-2,-3],"top_logprobs":[]})"),
      completion(R"("text":"xy","logprobs":{"tokens":["x","y"],"token_logprobs":[-1],"top_logprobs":[{"x":-1}]})"),
      completion(R"("text":"x","logprobs":{"tokens":["x"],"token_logprobs":null,"top_logprobs":"n/a","text_offset":{"0":1}})"),
      completion(R"("text":"x","logprobs":{"tokens":[]})"),
      completion(R"("logprobs":{"tokens":["x"],"token_logprobs":[-1]})"),
      completion(R"("text":null,"logprobs":{"tokens":["x","y"],"token_logprobs":[-1,-2]})"),
      completion(R"("text":"different","logprobs":{"tokens":["x","y"],"token_logprobs":[-1,-2]})"),
      completion(R"("text":"x","logprobs":{"tokens":["x"],"token_logprobs":[18446744073709551615],"top_logprobs":[{"x":-1.5e-300,"y":-0.0,"z":1e39}]})"),
      // Odd orders: logprobs before the text, offsets first, unknown keys anywhere.
      R"({"choices":[{"logprobs":{"text_offset":[0],"top_logprobs":[{"y":-2,"x":-1}],"extra":{"tokens":["no"]},"token_logprobs":[-1],"tokens":["x"]},"finish_reason":"length","text":"x","index":0}]})",
      R"({"choices":[{"index":1,"text":"b","logprobs":{"tokens":["b"],"token_logprobs":[-2]}},{"index":0,"text":"a","logprobs":{"tokens":["a"],"token_logprobs":[-1]}}]})",
      // Shapes that carry nothing (the general path ignores them without a note).
      completion(R"("text":"x","logprobs":{"content":null,"tokens":null})"),
      completion(R"("text":"x","logprobs":{"refusal":null})"),
      completion(R"("text":"x","logprobs":{"content":{"a":1},"tokens":"x"})"),
      completion(R"("text":"x","logprobs":{"content":[],"tokens":["a"]})"),
  };
  CHECK(check_each_and_all(read) == read.size());

  // Near misses the fast path hands to the general path.
  const std::vector<std::string> handed_over = {
      completion(R"("text":"x","logprobs":{})"),
      completion(R"("text":"x","logprobs":{"other":[1]})"),
      completion(R"("text":"x","logprobs":{"tokens":["x"],"tokens":["y"]})"),
      completion(R"("text":"x","logprobs":{"tokens":["x"],"top_logprobs":[{"x":-1,"x":-2}]})"),
      completion(R"("text":"x","logprobs":[{"tokens":["x"]}])"),
      completion(R"("text":"x","logprobs":{"tokens":["x"]},"logprobs":null)"),
  };
  CHECK(check_each_and_all(handed_over) == 0);
}

TEST_CASE("The fast path reads chat logprobs as the general path does") {
  const std::vector<std::string> read = {
      // OpenAI's and retrace serve's shape.
      chat(R"("delta":{"content":"Hi"},"logprobs":{"content":[{"token":"Hi","logprob":-0.0001,"bytes":[72,105],"top_logprobs":[{"token":"Hello","logprob":-9.25,"bytes":[72,101,108,108,111]},{"token":"Hi","logprob":-0.0001,"bytes":[72,105]}]}],"refusal":null})"),
      chat(R"("delta":{"content":"\ud83d\ude0a"},"logprobs":{"content":[{"token":"\\xf0\\x9f\\x98","logprob":-0.3,"bytes":[240,159,152],"top_logprobs":[{"token":"\\xf0\\x9f\\x98","logprob":-0.3,"bytes":[240,159,152]}]},{"token":"\\x8a","logprob":-0.01,"bytes":[138],"top_logprobs":[]}],"refusal":null})"),
      chat(R"("delta":{"role":"assistant","content":""},"logprobs":{"content":[],"refusal":null})"),
      chat(R"("delta":{},"logprobs":null)"),
      // llama.cpp's /v1 shape with ids; vLLM's token_id:N with and without an id.
      completion(R"("text":"isie","logprobs":{"content":[{"id":24453,"token":"isie","bytes":[105,115,105,101],"logprob":-6.2,"top_logprobs":[{"id":24453,"token":"isie","bytes":[105,115,105,101],"logprob":-6.2},{"id":10953,"token":" lleg","bytes":[32,108,108,101,103],"logprob":-6.4}]}]})"),
      chat(R"("delta":{"content":"a"},"logprobs":{"content":[{"token":"token_id:7","logprob":-1,"bytes":[97],"top_logprobs":[{"token":"token_id:7","logprob":-1},{"token":"token_id:8","logprob":-2,"id":9}]}]})"),
      chat(R"("delta":{"content":"a"},"logprobs":{"content":[{"token":"token_id:7","id":null,"logprob":-1}]})"),
      chat(R"("delta":{"content":"abcdef"},"logprobs":{"content":[{"token":"a","id":3.0},{"token":"b","id":-1},{"token":"c","id":2147483648},{"token":"d","id":"5"},{"token":"e","id":[5]},{"token":"f","id":2147483647}]})"),
      // Bytes that are not bytes: the token's text stays.
      chat(R"("delta":{"content":"abcdefg"},"logprobs":{"content":[{"token":"a","bytes":[256]},{"token":"b","bytes":[1.5]},{"token":"c","bytes":["c"]},{"token":"d","bytes":[[100]]},{"token":"e","bytes":null},{"token":"f","bytes":[]},{"token":"g","bytes":[103.0,-0.0]}]})"),
      chat(R"("delta":{"content":"xy"},"logprobs":{"content":[{"bytes":[120],"logprob":-1},{"logprob":-2,"token":5,"bytes":[121]}]})"),
      // Alternatives of every kind; an entry without a logprob takes its alternative's.
      chat(R"("delta":{"content":"x"},"logprobs":{"content":[{"token":"x","top_logprobs":[null,5,[],"s",{},{"token":"x","logprob":-3},{"logprob":-1},{"token":"y"},{"token":"z","bytes":[0,255],"logprob":-0.5},{"token":"w","bytes":[256],"logprob":-7}]}]})"),
      chat(R"("delta":{"content":"x"},"logprobs":{"content":[{"token":"x","bytes":[120],"top_logprobs":[{"token":"q","bytes":[120],"logprob":-2},{"token":"x","logprob":-1}]}]})"),
      chat(R"("delta":{"content":"x"},"logprobs":{"content":[{"token":"x","logprob":"-1","top_logprobs":null}]})"),
      // Escapes and unicode, odd orders, unknown keys, non-object entries.
      chat(R"("delta":{"content":"\"\u00e9\\"},"logprobs":{"content":[{"top_logprobs":[{"logprob":-1,"bytes":[34],"token":"\""}],"logprob":-1,"token":"\""},{"token":"\u00e9\\","extra":{"bytes":[1]},"logprob":-2}]})"),
      R"({"choices":[{"logprobs":{"refusal":null,"content":[null,7,"s",[1],{"token":"a","logprob":-1}]},"index":0,"delta":{"content":"a"}}]})",
      chat(R"("delta":{"content":"ab"},"logprobs":{"content":[{"token":"x","logprob":-1},{"token":"y","logprob":-2}]})"),
      R"({"choices":[{"index":0,"delta":{"content":"a"},"logprobs":{"content":[{"token":"a","logprob":-1}]}},{"index":1,"delta":{"content":"b"},"logprobs":{"content":[{"token":"b","logprob":-2}]}}]})",
  };
  CHECK(check_each_and_all(read) == read.size());

  // llama.cpp's other spellings and duplicates go to the general path.
  const std::vector<std::string> handed_over = {
      chat(R"("delta":{"content":"x"},"logprobs":{"content":[{"token":"x","prob":0.5}]})"),
      chat(R"("delta":{"content":"x"},"logprobs":{"content":[{"token":"x","top_probs":[{"token":"x","prob":0.5}]}]})"),
      chat(R"("delta":{"content":"x"},"logprobs":{"content":[{"content":"x","probs":[{"tok_str":"x","prob":0.5}]}]})"),
      chat(R"("delta":{"content":"x"},"logprobs":{"content":[{"token":"x","top_logprobs":[{"tok_str":"x","logprob":-1}]}]})"),
      chat(R"("delta":{"content":"x"},"logprobs":{"content":[{"token":"x","top_logprobs":[{"token":"x","prob":0.5}]}]})"),
      chat(R"("delta":{"content":"x"},"logprobs":{"content":[{"token":"x","token":"y"}]})"),
      chat(R"("delta":{"content":"x"},"logprobs":{"content":[{"token":"x","top_logprobs":[],"top_logprobs":[]}]})"),
      chat(R"("delta":{"content":"x"},"logprobs":{"content":[{"token":"x","top_logprobs":[{"logprob":-1,"logprob":-2}]}]})"),
      chat(R"("delta":{"content":"x"},"logprobs":{"content":[],"content":[]})"),
  };
  CHECK(check_each_and_all(handed_over) == 0);

  // Strings and labels long enough that the parser hands them over in parts.
  const std::string long_text(20000, 'w');
  CHECK(check_paths_agree({chat(R"("delta":{"content":")" + long_text + R"("},"logprobs":{"content":[{"token":")" +
                                long_text + R"(","logprob":-1,"top_logprobs":[{"token":")" + long_text +
                                R"(","logprob":-1}]}]})")},
                          Dialect::openai_chat) == 1);
  CHECK(check_paths_agree({completion(R"("text":")" + long_text + R"(","logprobs":{"tokens":[")" + long_text +
                                      R"("],"top_logprobs":[{")" + long_text + R"(":-1,"a":-2}]})")},
                          Dialect::openai_completions) == 1);
}

TEST_CASE("The fast path reads vLLM's token_ids as the general path does") {
  const std::vector<std::string> read = {
      completion(R"("text":"a","token_ids":[5])"),
      completion(R"("text":"ab","token_ids":[5,6])"),
      completion(R"("text":"","token_ids":[])"),
      completion(R"("text":"x","token_ids":[null,"s",1.0,-1,2147483648,2147483647,[1],{"a":1},true,1.5,18446744073709551615])"),
      completion(R"("text":"x","token_ids":null)"),
      completion(R"("text":"x","token_ids":"5")"),
      // With logprobs: ids fill the tokens' ids, a count that differs or an id that disagrees is noted.
      completion(R"("token_ids":[7],"text":"a","logprobs":{"tokens":["token_id:7"],"token_logprobs":[-1]})"),
      completion(R"("text":"a","logprobs":{"tokens":["a"],"token_logprobs":[-1]},"token_ids":[7])"),
      completion(R"("text":"ab","logprobs":{"tokens":["a","b"],"token_logprobs":[-1,-2]},"token_ids":[7])"),
      completion(R"("text":"a","logprobs":{"tokens":["token_id:7"],"token_logprobs":[-1]},"token_ids":[8])"),
      chat(R"("delta":{"content":"a"},"logprobs":{"content":[{"token":"token_id:7","logprob":-1,"bytes":[97],"top_logprobs":[{"token":"token_id:7","logprob":-1}]}]},"token_ids":[7])"),
  };
  CHECK(check_each_and_all(read) == read.size());
  const std::vector<std::string> handed_over = {
      completion(R"("text":"a","token_ids":[5],"token_ids":[6])"),
      completion(R"("text":"a","token_ids":{"0":5})"),
  };
  CHECK(check_each_and_all(handed_over) == 0);
}

TEST_CASE("Fast and general decoding agree on mutated events with logprobs") {
  const std::string legacy = completion(
      R"("text":" the\u00e9","logprobs":{"tokens":[" the","bytes:\\xc3\\xa9"],"token_logprobs":[-0.5,-1],"top_logprobs":[{" the":-0.5," a":-1.25},{"bytes:\\xc3\\xa9":-1,"token_id:4":-3}],"text_offset":[10,14]})");
  const std::string chat_event = chat(
      R"("delta":{"content":"Hi!"},"logprobs":{"content":[{"token":"Hi","logprob":-0.25,"bytes":[72,105],"id":5,"top_logprobs":[{"token":"Hello","logprob":-9.25,"bytes":[72,101]},{"token":"token_id:5","logprob":-0.25}]},{"token":"!","logprob":-1,"bytes":[33],"top_logprobs":[]}],"refusal":null},"token_ids":[5,9])");
  std::mt19937_64 random(1811);  // fixed seed: a failure reproduces
  std::size_t read_fast = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string event = round % 2 ? legacy : chat_event;
    mutate(event, random);
    INFO(event);
    read_fast += check_paths_agree({legacy, event, chat_event}, round % 3 ? Dialect::openai_completions : Dialect::openai_chat);
  }
  CHECK(read_fast > 6000);  // the unmutated events at least, and some mutants
}

// ---------------------------------------------------------------------------------------------
// Whole (non-streamed) answers take the same SAX path, "usage" included.

namespace {

// `body` as a whole answer; whether the fast path read it.
bool check_bodies_agree(const std::string& body, Dialect dialect) {
  return check_decoders_agree(dialect, [&](ResponseDecoder& decoder) { decoder.on_body(body, 1000); }) == 1;
}

const char* const kWholeAnswers[] = {
    "llamacpp/completion-native-nonstream.json", "llamacpp/v1-chat-completions-nonstream.json",
    "llamacpp/v1-completions-nonstream-logprobs.json", "llamacpp/v1-completions-nonstream.json",
    "openai/chat-nonstream-logprobs.json", "openai/chat-nonstream-tool-calls.json",
    "openai/embeddings.json", "openai/responses-nonstream.json", "anthropic/messages-nonstream.json",
    "tgi/chat-nonstream-tool-calls.json", "tgi/generate.json", "vllm/chat-nonstream-error-v0.json",
    "vllm/chat-nonstream-tool-calls.json", "vllm/completions-nonstream-echo-logprobs.json",
    "vllm/completions-nonstream-logprobs.json", "vllm/completions-nonstream-token-id-strings.json",
    "vllm/completions-nonstream-token-ids.json"};

}  // namespace

TEST_CASE("Fast and general decoding agree on every sample whole answer in every dialect") {
  const Dialect dialects[] = {Dialect::unknown, Dialect::openai_completions, Dialect::openai_chat,
                              Dialect::llamacpp_completion, Dialect::tgi_generate};
  std::size_t read_fast = 0;
  for (const char* name : kWholeAnswers) {
    const std::string body = read_data(name);
    for (Dialect dialect : dialects) {
      INFO(name << " as " << to_string(dialect));
      read_fast += check_bodies_agree(body, dialect);
    }
  }
  CHECK(read_fast >= 6);  // the plain completions and chat answers, with and without logprobs
}

TEST_CASE("Fast and general decoding agree on every spelling of usage") {
  const std::string counts[] = {"7", "7.0", "1e2", "-3", "0", "12.5", "9223372036854775807", "9223372036854775808",
                                "18446744073709551616", "9e15", "8e15", "null", "true", "\"7\"", "[7]", "{\"n\":7}"};
  const std::string completion_head =
      R"({"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" a b","logprobs":null,"finish_reason":"length"}],)";
  const std::string chat_head =
      R"({"id":"c-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"a b","refusal":null},"finish_reason":"stop"}],)";
  std::size_t read_fast = 0;
  std::size_t checked = 0;
  for (const std::string& count : counts) {
    const std::string usages[] = {
        R"("usage":{"prompt_tokens":)" + count + R"(,"completion_tokens":2,"total_tokens":)" + count + "}",
        R"("usage":{"prompt_tokens":3,"completion_tokens":)" + count + R"(,"completion_tokens_details":{"reasoning_tokens":)" + count + "}}",
        R"("usage":{"completion_tokens_details":)" + count + R"(,"reasoning_tokens":5,"total_tokens":9})",
        R"("usage":{"reasoning_tokens":)" + count + R"(,"completion_tokens_details":{"audio_tokens":1}})",
        R"("usage":)" + count,
        R"("usage":{"prompt_tokens":1,"prompt_tokens":)" + count + "}",  // duplicate: the DOM decides
        R"("usage":{"completion_tokens_details":{"reasoning_tokens":1,"reasoning_tokens":)" + count + "}}",
    };
    for (const std::string& usage : usages) {
      for (const std::string& head : {completion_head, chat_head}) {
        const std::string body = head + usage + "}";
        INFO(body);
        for (Dialect dialect : {Dialect::openai_completions, Dialect::openai_chat}) {
          read_fast += check_bodies_agree(body, dialect);
          // The same object as a stream's last event (vLLM's include_usage) agrees too.
          read_fast += check_paths_agree({body}, dialect) == 1;
          ++checked;
        }
      }
    }
  }
  CHECK(read_fast > checked);  // most of them went the fast way, both as bodies and as events
}

TEST_CASE("Fast and general decoding agree on mutated whole answers") {
  const std::string completion =
      R"({"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" word","logprobs":null,"finish_reason":"length"}],"usage":{"prompt_tokens":4,"completion_tokens":1,"total_tokens":5,"completion_tokens_details":{"reasoning_tokens":0}}})";
  const std::string chat =
      R"({"id":"c-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":" hi"},"delta":{"content":"x"},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":4,"completion_tokens":1,"total_tokens":5,"reasoning_tokens":0}})";
  std::mt19937_64 random(2003);  // fixed seed: a failure reproduces
  std::size_t read_fast = 0;
  for (int round = 0; round < 2000; ++round) {
    std::string body = round % 2 ? completion : chat;
    mutate(body, random);
    INFO(body);
    read_fast += check_bodies_agree(body, round % 3 ? Dialect::openai_completions : Dialect::openai_chat);
  }
  CHECK(read_fast > 0);
}
