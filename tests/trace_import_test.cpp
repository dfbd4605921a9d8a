// Tests of importing public serving traces (dataset/trace_import.hpp): every format, its send
// offsets and sessions, synthetic prompts, compressed inputs, detection and bad rows.
#include <zlib.h>
#include <zstd.h>

#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <fstream>

#include "base/described_json.hpp"
#include "dataset/import_settings.hpp"
#include "dataset/synthetic_prompt.hpp"
#include "dataset/trace_import.hpp"
#include "dataset/trace_rows.hpp"
#include "tests/temp_dir.hpp"

using namespace retrace;
namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

fs::path write(const TempDir& dir, const std::string& name, const std::string& text) {
  fs::path path = dir / name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

LoadedTrace import(const TempDir& dir, const fs::path& in, const std::string& from,
                   TraceImportSummary* summary = nullptr) {
  TraceImportOptions options;
  options.from = from;
  fs::path out = dir / (in.filename().string() + ".rtrace");
  auto result = import_trace(in, out, options);
  if (summary) *summary = result;
  return load_trace(out);
}

json::object body_of(const Exchange& exchange) {
  return json::parse(exchange.request.body).as_object();
}

std::string prompt_of(const Exchange& exchange) {
  auto body = body_of(exchange);
  return std::string(body["messages"].as_array().back().as_object()["content"].as_string());
}

std::size_t words(const std::string& text) {
  std::size_t count = 0;
  bool in_word = false;
  for (char c : text) {
    if (c != ' ' && !in_word) ++count;
    in_word = c != ' ';
  }
  return count;
}

const std::string kMooncake =
    "{\"timestamp\": 0, \"input_length\": 700, \"output_length\": 12, \"hash_ids\": [1, 2]}\n"
    "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 5, \"hash_ids\": [1, 3]}\n"
    "\n"
    "{\"timestamp\": 250, \"input_length\": 40, \"output_length\": 8, \"hash_ids\": [9]}\n";

const std::string kAzure =
    "TIMESTAMP,ContextTokens,GeneratedTokens\n"
    "2023-11-16 18:17:03.9799600,120,7\n"
    "2023-11-16 18:17:03.9799600,33,4\n"
    "2023-11-16 18:17:04.0123456,250,16\n";

}  // namespace

TEST_CASE("Azure timestamps with seven fractional digits parse to the exact nanosecond") {
  // 2023-11-16 18:17:03 UTC is 1700158623 s after the epoch (date -ud @1700158623).
  CHECK(rows::parse_date_time_ns("2023-11-16 18:17:03.9799600") == 1700158623979960000);
  CHECK(rows::parse_date_time_ns("2023-11-16 18:17:03") == 1700158623000000000);
  CHECK(rows::parse_date_time_ns("2023-11-16T18:17:03.5Z") == 1700158623500000000);
  CHECK(rows::parse_date_time_ns("2024-05-10 00:00:00.009930+00:00") == 1715299200009930000);
  CHECK(rows::parse_date_time_ns("2024-05-10 02:00:00.000000001+02:00") == 1715299200000000001);
  CHECK(rows::parse_date_time_ns("2024-02-29 00:00:00") == 1709164800000000000);
}

TEST_CASE("a date time that is not one is refused rather than guessed") {
  for (const char* text : {"2023-13-01 00:00:00", "2023-02-29 00:00:00", "2023-11-16 24:00:00",
                           "2023-11-16 18:17:03.1234567891", "2023-11-16 18:17:03.",
                           "2023-11-16", "16/11/2023 18:17:03", "2023-11-16 18:17:03 junk", "",
                           // int64 nanoseconds hold 1678..2262: a year outside 1970..2261 would
                           // overflow or precede the epoch (found by fuzz_trace_import)
                           "0943-11-16 18:17:03", "1969-12-31 23:59:59", "2262-04-12 00:00:00"})
    CHECK_FALSE(rows::parse_date_time_ns(text));
}

TEST_CASE("Azure rows keep their send offsets from the first row and their wall clock") {
  TempDir dir;
  auto trace = import(dir, write(dir, "azure.csv", kAzure), "azure");
  REQUIRE(trace.exchanges.size() == 3);
  CHECK(trace.exchanges[0].intended_send_ns == 0);
  CHECK(trace.exchanges[1].intended_send_ns == 0);
  CHECK(trace.exchanges[2].intended_send_ns == 32385600);
  CHECK(trace.exchanges[2].actual_send_ns == 32385600);
  CHECK(trace.exchanges[0].start_unix_ns == 1700158623979960000);
  CHECK(body_of(trace.exchanges[2])["max_tokens"] == 16);
  CHECK(words(prompt_of(trace.exchanges[2])) == 250);
}

TEST_CASE("Mooncake bursts of equal timestamps go out together and milliseconds become offsets") {
  TempDir dir;
  auto trace = import(dir, write(dir, "mooncake.jsonl", kMooncake), "mooncake");
  REQUIRE(trace.exchanges.size() == 3);
  CHECK(trace.exchanges[0].actual_send_ns == 0);
  CHECK(trace.exchanges[1].actual_send_ns == 0);
  CHECK(trace.exchanges[2].actual_send_ns == 250'000'000);
  auto body = body_of(trace.exchanges[0]);
  CHECK(body["max_tokens"] == 12);
  CHECK(body["ignore_eos"] == true);
  CHECK_FALSE(body.contains("model"));
  CHECK(trace.header.source == Source::imported);
  CHECK(json::parse(trace.header.settings).as_object()["prompt_tokens"] == "approximate");
}

TEST_CASE("an imported trace's settings read back into the typed settings they were written from") {
  TempDir dir;
  auto trace = import(dir, write(dir, "mooncake.jsonl", kMooncake), "mooncake");
  TraceImportSettings settings;
  REQUIRE(described_json::read_json(json::parse(trace.header.settings), settings));
  CHECK(settings.from == "mooncake");
  CHECK(settings.ignore_eos);
  CHECK(settings.prompt_tokens == std::optional<std::string>("approximate"));
  CHECK(settings.max_tokens == "the recorded output length");
  CHECK_FALSE(settings.skips);
  CHECK_FALSE(settings.max_turns);
  // Every key written is a member (nobody writes one by hand).
  auto written = json::parse(trace.header.settings).as_object();
  CHECK(json::serialize(described_json::to_json(settings)) == json::serialize(written));
}

TEST_CASE("equal hash ids give byte-identical prompt blocks and different ids different text") {
  TempDir dir;
  auto trace = import(dir, write(dir, "mooncake.jsonl", kMooncake), "mooncake");
  std::string first = prompt_of(trace.exchanges[0]);
  std::string second = prompt_of(trace.exchanges[1]);
  CHECK(words(first) == 700);
  CHECK(words(second) == 600);
  // Block 1 (512 words) is shared; the text after it (ids 2 and 3) is not.
  std::size_t block_end = 0;
  for (int k = 0; k < 512; ++k) block_end = first.find(' ', block_end + 1);
  CHECK(first.substr(0, block_end) == second.substr(0, block_end));
  CHECK(first.substr(block_end, 40) != second.substr(block_end, 40));
  CHECK(prompt_of(trace.exchanges[2]).substr(0, 40) != first.substr(0, 40));
}

TEST_CASE("a tokenizer corrects the prompt to the exact token count it reports") {
  // A tokenizer that splits one word in ten into two tokens: the first guess is long, and counts
  // of 10, 20, ... tokens cannot be made.
  int calls = 0;
  auto count_tokens = [&](std::string_view text) {
    std::int64_t count = 0;
    bool in_word = false;
    for (char c : text) {
      if (c != ' ' && !in_word) count += (count % 10 == 9) ? 2 : 1;
      in_word = c != ' ';
    }
    return count;
  };
  PromptSynthesizer prompts([&](std::string_view text) {
    ++calls;
    return count_tokens(text);
  });
  std::string text(prompts.build({7, 8}, 16, 95, 1));
  CHECK(calls >= 2);
  CHECK(prompts.inexact_prompts() == 0);
  CHECK(count_tokens(text) == 95);
  CHECK(words(text) < 95);
  prompts.build({7, 8}, 16, 100, 1);
  CHECK(prompts.inexact_prompts() == 1);
  CHECK(prompts.worst_miss() == 1);
  PromptSynthesizer approximate;
  CHECK(words(std::string(approximate.build({7, 8}, 16, 100, 1))) == 100);
}

TEST_CASE("Bailian turns that name a parent join their root chat's session") {
  TempDir dir;
  auto in = write(dir, "bailian.jsonl",
                  "{\"chat_id\": 10, \"parent_chat_id\": -1, \"timestamp\": 0.5, \"input_length\": 40, "
                  "\"output_length\": 6, \"type\": \"text\", \"turn\": 1, \"hash_ids\": [100, 101, 102]}\n"
                  "{\"chat_id\": 12, \"parent_chat_id\": -1, \"timestamp\": 1.0, \"input_length\": 20, "
                  "\"output_length\": 3, \"type\": \"text\", \"turn\": 1, \"hash_ids\": [200, 201]}\n"
                  "{\"chat_id\": 11, \"parent_chat_id\": 10, \"timestamp\": 2.0, \"input_length\": 70, "
                  "\"output_length\": 6, \"type\": \"text\", \"turn\": 2, \"hash_ids\": [100, 101, 102, 103, 104]}\n"
                  "{\"chat_id\": 13, \"parent_chat_id\": 11, \"timestamp\": 3.25, \"input_length\": 90, "
                  "\"output_length\": 6, \"type\": \"text\", \"turn\": 3, \"hash_ids\": [100, 101, 102, 103, 104, 105]}\n");
  TraceImportSummary summary;
  auto trace = import(dir, in, "bailian", &summary);
  REQUIRE(trace.exchanges.size() == 4);
  CHECK(summary.sessions == 2);
  CHECK(trace.exchanges[0].session_id == "chat-10");
  CHECK(trace.exchanges[1].session_id == "chat-12");
  CHECK(trace.exchanges[2].session_id == "chat-10");
  CHECK(trace.exchanges[3].session_id == "chat-10");
  CHECK(trace.exchanges[3].actual_send_ns == 2'750'000'000);
  CHECK(*trace.exchanges[3].label("turn") == "3");
  // 16-token blocks: the first 48 words (ids 100..102) are the same in every turn of chat 10.
  std::string turn1 = prompt_of(trace.exchanges[0]);
  CHECK(prompt_of(trace.exchanges[2]).substr(0, turn1.size()) == turn1);
}

TEST_CASE("BurstGPT rows that failed in production are counted and left out") {
  TempDir dir;
  auto in = write(dir, "burst.csv",
                  "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type,Session ID,Elapsed time\n"
                  "5,ChatGPT,100,20,120,Conversation log,s1,1.5\n"
                  "5,GPT-4,50,0,50,API log,,0\n"
                  "7.5,ChatGPT,30,10,40,Conversation log,s1,2\n");
  TraceImportSummary summary;
  auto trace = import(dir, in, "burstgpt", &summary);
  REQUIRE(trace.exchanges.size() == 2);
  CHECK(summary.skipped == 1);
  CHECK(trace.exchanges[1].actual_send_ns == 2'500'000'000);
  CHECK(trace.exchanges[1].session_id == "session-s1");
  CHECK(*trace.exchanges[0].label("trace_model") == "ChatGPT");
  CHECK_FALSE(body_of(trace.exchanges[0]).contains("model"));
}

TEST_CASE("ShareGPT conversations become sessions of turns carrying the earlier answers") {
  TempDir dir;
  auto in = write(dir, "sharegpt.json",
                  "[\n {\"id\": \"c1\", \"conversations\": [\n"
                  "   {\"from\": \"human\", \"value\": \"What is a prefix cache?\"},\n"
                  "   {\"from\": \"gpt\", \"value\": \"It keeps work done on a prompt's start [for] reuse.\"},\n"
                  "   {\"from\": \"human\", \"value\": \"And when is it cleared?\"},\n"
                  "   {\"from\": \"gpt\", \"value\": \"When memory runs short.\"}]},\n"
                  " {\"id\": \"c2\", \"conversations\": [{\"from\": \"human\", \"value\": \"Say hi.\"}]}\n]\n");
  TraceImportSummary summary;
  auto trace = import(dir, in, "sharegpt", &summary);
  REQUIRE(trace.exchanges.size() == 3);
  CHECK(summary.sessions == 2);
  auto second = body_of(trace.exchanges[1]);
  CHECK(second["messages"].as_array().size() == 3);
  CHECK(second["messages"].as_array()[1].as_object()["role"] == "assistant");
  CHECK(second["max_tokens"] == 5);  // 4 words / 0.75
  CHECK(body_of(trace.exchanges[2])["max_tokens"] == 128);  // no answer: --max-tokens
  CHECK(trace.exchanges[1].session_id == "c1");
}

TEST_CASE("gzip and zstd inputs import the same as the plain file") {
  TempDir dir;
  std::string gz;
  {
    gzFile file = gzopen((dir / "m.jsonl.gz").c_str(), "wb");
    gzwrite(file, kMooncake.data(), static_cast<unsigned>(kMooncake.size()));
    gzclose(file);
  }
  std::string zst(ZSTD_compressBound(kAzure.size()), '\0');
  zst.resize(ZSTD_compress(zst.data(), zst.size(), kAzure.data(), kAzure.size(), 3));
  write(dir, "a.csv.zst", zst);
  auto plain_m = import(dir, write(dir, "m.jsonl", kMooncake), "mooncake");
  auto gz_m = import(dir, dir / "m.jsonl.gz", "mooncake");
  auto plain_a = import(dir, write(dir, "a.csv", kAzure), "azure");
  auto zst_a = import(dir, dir / "a.csv.zst", "azure");
  REQUIRE(gz_m.exchanges.size() == plain_m.exchanges.size());
  for (std::size_t i = 0; i < gz_m.exchanges.size(); ++i)
    CHECK(gz_m.exchanges[i].request == plain_m.exchanges[i].request);
  REQUIRE(zst_a.exchanges.size() == plain_a.exchanges.size());
  CHECK(zst_a.exchanges[2].actual_send_ns == plain_a.exchanges[2].actual_send_ns);
  CHECK(detect_import_format(dir / "m.jsonl.gz") == "mooncake");
  CHECK(detect_import_format(dir / "a.csv.zst") == "azure");
}

TEST_CASE("a truncated gzip input is an error that names the file") {
  TempDir dir;
  std::string big;
  for (int i = 0; i < 2000; ++i) big += kMooncake;
  {
    gzFile file = gzopen((dir / "m.gz").c_str(), "wb");
    gzwrite(file, big.data(), static_cast<unsigned>(big.size()));
    gzclose(file);
  }
  fs::resize_file(dir / "m.gz", fs::file_size(dir / "m.gz") / 2);
  CHECK_THROWS_WITH(import(dir, dir / "m.gz", "mooncake"), Catch::Contains("m.gz") && Catch::Contains("cut short"));
  CHECK_FALSE(fs::exists(dir / "m.gz.rtrace"));
}

TEST_CASE("the format is told from the first line and an unknown one names every format") {
  TempDir dir;
  CHECK(detect_import_format(write(dir, "m", kMooncake)) == "mooncake");
  CHECK(detect_import_format(write(dir, "a", kAzure)) == "azure");
  CHECK(detect_import_format(write(dir, "b", "{\"chat_id\": 1, \"parent_chat_id\": -1}\n")) == "bailian");
  CHECK(detect_import_format(write(dir, "g", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n")) == "burstgpt");
  CHECK(detect_import_format(write(dir, "s", "\n[{\"id\": \"x\",\n")) == "sharegpt");
  CHECK(detect_import_format(write(dir, "j", "{\"prompt\": \"hi\"}\n")) == "jsonl");
  CHECK(detect_import_format(write(dir, "o", "{\"custom_id\": \"1\", \"body\": {}}\n")) == "openai-batch");
  CHECK_THROWS_WITH(detect_import_format(write(dir, "u", "when,what\n1,2\n")),
                    Catch::Contains("u:1:") && Catch::Contains("mooncake, bailian, azure, burstgpt, sharegpt"));
}

TEST_CASE("the format is told from the first 64 KiB of a line of any length") {
  TempDir dir;
  // One JSONL row of 1 MB whose keys come first, and one whose deciding key comes after 64 KiB.
  std::string long_text(1 << 20, 'x');
  CHECK(detect_import_format(write(dir, "j", "{\"id\": 1, \"messages\": [{\"role\": \"user\", \"content\": \"" +
                                                 long_text + "\"}]}\n")) == "jsonl");
  CHECK(detect_import_format(write(dir, "b", "\xEF\xBB\xBF\n\n[" + long_text)) == "sharegpt");
  CHECK_THROWS_WITH(detect_import_format(write(dir, "late", "{\"note\": \"" + long_text + "\", \"prompt\": \"hi\"}\n")),
                    Catch::Contains("late:1: cannot tell the format from the first line"));
  // Keys of nested objects do not count; a lone surrogate does not get in the way.
  CHECK_THROWS(detect_import_format(write(dir, "n", "{\"meta\": {\"prompt\": 1}}\n")));
  CHECK(detect_import_format(write(dir, "s", "\n\n{\"prompt\": \"\\ud83d\"}\n")) == "jsonl");
  CHECK_THROWS_WITH(detect_import_format(write(dir, "u", "\n\nwhen,what\n")), Catch::Contains("u:3: cannot tell"));
}

TEST_CASE("lone surrogate escapes in trace rows become U+FFFD and are counted") {
  TempDir dir;
  TraceImportSummary summary;
  auto trace = import(dir,
                      write(dir, "sharegpt.json",
                            "[{\"id\": \"a\", \"conversations\": [{\"from\": \"human\", \"value\": \"hi \\ud83d\"}, "
                            "{\"from\": \"gpt\", \"value\": \"\\ude00 yes\"}, {\"from\": \"human\", \"value\": \"more\"}]}]"),
                      "sharegpt", &summary);
  CHECK(summary.written == 2);
  CHECK(summary.lone_surrogates == 2);
  CHECK(trace.exchanges[1].request.body.find("hi \xEF\xBF\xBD") != std::string::npos);
  auto bailian = import(dir,
                        write(dir, "bailian.jsonl",
                              "{\"chat_id\": 1, \"parent_chat_id\": -1, \"timestamp\": 0, \"input_length\": 4, "
                              "\"output_length\": 2, \"type\": \"te\\ud800xt\"}\n"),
                        "bailian", &summary);
  CHECK(summary.lone_surrogates == 1);
  REQUIRE(bailian.exchanges.size() == 1);
  CHECK(*bailian.exchanges[0].label("type") == "te\xEF\xBF\xBDxt");
}

TEST_CASE("a malformed row stops the import with its line number and leaves no output file") {
  TempDir dir;
  struct Case {
    std::string from, text, expected;
  };
  for (const auto& c : std::vector<Case>{
           {"mooncake", kMooncake + "{\"timestamp\": 300, \"input_length\": -4, \"output_length\": 1}\n",
            ":5: \"input_length\" must be a whole number"},
           {"mooncake", kMooncake + "{\"timestamp\": 300, \"input_length\n", ":5: not valid JSON"},
           {"azure", kAzure + "2023-11-16 18:17:04.5,12\n", ":5: expected 3 comma-separated fields"},
           {"azure", kAzure + "16/11/2023 18:17:04,12,3\n", ":5: TIMESTAMP \"16/11/2023 18:17:04\""},
           {"burstgpt", "Timestamp,Request tokens,Response tokens\n1,x,2\n", ":2: \"Request tokens\""},
           {"sharegpt", "[{\"id\": 1, \"conversations\": []},\n{\"id\": 2, \"conversations\": [{\"from\": \"cat\", \"value\": \"\"}]}]",
            ":2: conversation 2: unknown speaker \"cat\""},
       }) {
    INFO(c.from << ": " << c.expected);
    fs::path in = write(dir, "bad." + c.from, c.text);
    fs::path out = dir / "bad.rtrace";
    TraceImportOptions options;
    options.from = c.from;
    CHECK_THROWS_WITH(import_trace(in, out, options), Catch::Contains(c.expected));
    CHECK_FALSE(fs::exists(out));
    CHECK_FALSE(fs::exists(dir / "bad.rtrace.tmp"));
  }
}

TEST_CASE("a row claiming more tokens than import accepts is refused with its line before any prompt is built") {
  TempDir dir;
  struct Case {
    std::string from, text, expected;
  };
  for (const auto& c : std::vector<Case>{
           {"mooncake", kMooncake + "{\"timestamp\": 300, \"input_length\": 1000000000000, \"output_length\": 1}\n",
            ":5: the row claims 1000000000000 prompt tokens, past the 1048576"},
           {"mooncake", kMooncake + "{\"timestamp\": 300, \"input_length\": 9223372036854775807, \"output_length\": 1}\n",
            ":5: the row claims 9223372036854775807 prompt tokens"},
           {"mooncake", kMooncake + "{\"timestamp\": 300, \"input_length\": 5, \"output_length\": 1e18}\n",
            ":5: the row claims 1000000000000000000 output tokens"},
           {"azure", kAzure + "2023-11-16 18:17:04.5,1048577,3\n", ":5: the row claims 1048577 prompt tokens"},
           {"burstgpt", "Timestamp,Request tokens,Response tokens\n1,100000000,2\n", ":2: the row claims 100000000 prompt tokens"},
       }) {
    INFO(c.from << ": " << c.expected);
    fs::path in = write(dir, "big." + c.from, c.text);
    fs::path out = dir / "big.rtrace";
    TraceImportOptions options;
    options.from = c.from;
    CHECK_THROWS_WITH(import_trace(in, out, options), Catch::Contains(c.expected));
    CHECK_FALSE(fs::exists(out));
  }
  // The bound itself is accepted.
  fs::path in = write(dir, "edge.mooncake", "{\"timestamp\": 0, \"input_length\": 1048576, \"output_length\": 1048576}\n");
  TraceImportOptions options;
  options.from = "mooncake";
  CHECK(import_trace(in, dir / "edge.rtrace", options).written == 1);
}

TEST_CASE("a row before the first or more than 100 years after it is refused with its line") {
  TempDir dir;
  struct Case {
    std::string from, text, expected;
  };
  for (const auto& c : std::vector<Case>{
           {"mooncake", kMooncake + "{\"timestamp\": -5, \"input_length\": 5, \"output_length\": 1}\n",
            ":5: the row's time is 0.005 s before the first row's"},
           {"mooncake", kMooncake + "{\"timestamp\": 5000000000000, \"input_length\": 5, \"output_length\": 1}\n",
            ":5: the row's time is more than 100 years after the first row's (5000000000.000 s)"},
           // -9e18 ns to +9e18 ns: a span past what int64 nanoseconds hold (signed overflow before).
           {"mooncake", "{\"timestamp\": -9000000000000, \"input_length\": 5, \"output_length\": 1}\n"
                        "{\"timestamp\": 9000000000000, \"input_length\": 5, \"output_length\": 1}\n",
            ":2: the row's time is more than 100 years after the first row's (past 292 years)"},
           {"burstgpt", "Timestamp,Request tokens,Response tokens\n4000000000,5,2\n0,5,2\n",
            ":3: the row's time is 4000000000.000 s before the first row's"},
       }) {
    INFO(c.from << ": " << c.expected);
    fs::path in = write(dir, "span." + c.from, c.text);
    fs::path out = dir / "span.rtrace";
    TraceImportOptions options;
    options.from = c.from;
    CHECK_THROWS_WITH(import_trace(in, out, options), Catch::Contains(c.expected));
    CHECK_FALSE(fs::exists(out));
  }
}

TEST_CASE("rows out of time order after the first are imported and counted with the first one's line") {
  TempDir dir;
  TraceImportSummary summary;
  auto trace = import(dir, write(dir, "unsorted.csv", "Timestamp,Request tokens,Response tokens\n1,5,2\n9,5,2\n4,5,2\n3,5,2\n"),
                      "burstgpt", &summary);
  REQUIRE(trace.exchanges.size() == 4);
  CHECK(trace.exchanges[2].actual_send_ns == 3'000'000'000);
  CHECK(summary.out_of_order == 2);
  CHECK_THAT(summary.first_out_of_order, Catch::EndsWith("unsorted.csv:4"));
}

TEST_CASE("a row nested deeper than 32 levels is refused for its depth with its line") {
  TempDir dir;
  auto nested = [](int levels) { return std::string(levels, '[') + std::string(levels, ']'); };
  // The first line: not blamed on the format it may or may not have.
  CHECK_THROWS_WITH(detect_import_format(write(dir, "d", "\n{\"meta\": " + nested(40) + "}\n")),
                    Catch::Contains("d:2: the JSON nests objects and arrays more than 32 levels deep"));
  CHECK_THROWS_WITH(detect_import_format(write(dir, "u", "{\"meta\": " + nested(20) + "}\n")),
                    Catch::Contains("cannot tell the format from the first line"));
  fs::path in = write(dir, "deep.mooncake", kMooncake + "{\"timestamp\": 300, \"input_length\": 5, "
                                                        "\"output_length\": 1, \"x\": " + nested(40) + "}\n");
  TraceImportOptions options;
  options.from = "mooncake";
  CHECK_THROWS_WITH(import_trace(in, dir / "deep.rtrace", options),
                    Catch::Contains(":5: the JSON nests objects and arrays more than 32 levels deep"));
}

TEST_CASE("a ShareGPT conversation past the turn cap keeps its first turns and is counted") {
  TempDir dir;
  std::string turns;
  for (int k = 0; k < 300; ++k)
    turns += std::string(k ? "," : "") + "{\"from\": \"human\", \"value\": \"q" + std::to_string(k) +
             "\"}, {\"from\": \"gpt\", \"value\": \"a\"}";
  auto in = write(dir, "long.json", "[{\"id\": \"long\", \"conversations\": [" + turns +
                                        "]}, {\"id\": \"short\", \"conversations\": [{\"from\": \"human\", \"value\": \"hi\"}]}]");
  TraceImportSummary summary;
  auto trace = import(dir, in, "sharegpt", &summary);
  REQUIRE(trace.exchanges.size() == kDefaultMaxTurns + 1);
  CHECK(summary.cut_conversations == 1);
  auto last = body_of(trace.exchanges[kDefaultMaxTurns - 1]);
  CHECK(last["messages"].as_array().size() == 2 * kDefaultMaxTurns - 1);
  CHECK(trace.exchanges[kDefaultMaxTurns].session_id == "short");
  CHECK(json::parse(trace.header.settings).as_object()["max_turns"] == kDefaultMaxTurns);
}
