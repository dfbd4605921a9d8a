// What an imported trace's header says of how it was made ("settings"): one described struct per
// kind of import, written with described_json (base/described_json.hpp) so that no key is spelt
// by hand; the keys are those import wrote before the structs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <boost/describe.hpp>

namespace retrace {

// `retrace import` of a JSONL or Batch dataset (`from` jsonl or openai-batch), or of `export`'s
// lines without a header (`from` export: nothing else set).
struct DatasetImportSettings {
  std::string from;
  std::optional<std::string> endpoint;
  std::optional<std::string> model;  // absent when the dataset's own (or none) is kept
  std::optional<std::int64_t> max_tokens;
  std::optional<bool> greedy;
};
BOOST_DESCRIBE_STRUCT(DatasetImportSettings, (), (from, endpoint, model, max_tokens, greedy))

// `retrace import --from mooncake|bailian|azure|burstgpt|sharegpt`: where each field of a request
// came from, in words (a person reads them in `inspect`).
struct TraceImportSettings {
  std::string from;
  std::string endpoint;
  bool ignore_eos = true;
  std::string offsets = "from the trace's first row";
  std::string prompts;
  std::optional<std::uint64_t> max_turns;  // ShareGPT
  std::string max_tokens;
  std::optional<std::string> prompt_tokens, prompt_tokens_rule;  // synthetic prompts
  std::optional<std::string> tokenizer_url;
  std::optional<std::string> skips;
};
BOOST_DESCRIBE_STRUCT(TraceImportSettings, (),
                      (from, endpoint, ignore_eos, offsets, prompts, max_turns, max_tokens, prompt_tokens,
                       prompt_tokens_rule, tokenizer_url, skips))

}  // namespace retrace
