// One event's tokens: read from logprobs (chat-shaped or legacy parallel arrays) and id arrays,
// and the bytes of each.
//
// Bytes of a token: the `bytes` array where the server gives one, else the token's text; where
// tokens carry no text (ids only, "token_id:N") the event's text delta is split between them by
// `text_offset` when present, given whole to a single token, or else put on the first token of
// the event (noted), so that the concatenated bytes always equal the text the server sent.
#include <algorithm>
#include <cmath>
#include <limits>

#include "llm/decoder_impl.hpp"

namespace retrace::llm {

std::int32_t token_id_of(const json::value& value) { return token_id_of(integer_of(value)); }

// Doubles from the wire clamped into float range (an out-of-range cast is undefined behaviour).
float to_float(double value) {
  if (std::isnan(value)) return 0;
  return static_cast<float>(std::clamp(value, static_cast<double>(std::numeric_limits<float>::lowest()),
                                       static_cast<double>(std::numeric_limits<float>::max())));
}

// "logprob", or the log of "prob" (llama.cpp's probability spellings). A zero probability maps
// to the lowest float rather than -inf, so that margins computed from it stay finite.
std::optional<float> logprob_of(const json::object& object) {
  if (const auto logprob = number_field(object, "logprob")) {
    return to_float(*logprob);
  }
  if (const auto probability = number_field(object, "prob")) {
    if (!(*probability > 0)) return std::numeric_limits<float>::lowest();
    return to_float(std::log(std::min(*probability, 1.0)));
  }
  return std::nullopt;
}

// vLLM's return_tokens_as_token_ids spelling of a token: "token_id:123".
std::optional<std::int32_t> parse_token_id_spelling(std::string_view text) {
  constexpr std::string_view prefix = "token_id:";
  if (text.size() <= prefix.size() || text.substr(0, prefix.size()) != prefix) return std::nullopt;
  std::int64_t id = 0;
  for (char c : text.substr(prefix.size())) {
    if (c < '0' || c > '9') return std::nullopt;
    id = id * 10 + (c - '0');
    if (id > INT32_MAX) return std::nullopt;
  }
  return static_cast<std::int32_t>(id);
}

// "bytes:\xe5\x85" as the bytes it names; nullopt when `text` is not exactly that form.
std::optional<std::string> parse_bytes_spelling(std::string_view text) {
  constexpr std::string_view prefix = "bytes:";
  if (text.size() <= prefix.size() || text.substr(0, prefix.size()) != prefix) return std::nullopt;
  text.remove_prefix(prefix.size());
  if (text.size() % 4 != 0) return std::nullopt;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string bytes;
  for (std::size_t at = 0; at < text.size(); at += 4) {
    const int high = hex(text[at + 2]);
    const int low = hex(text[at + 3]);
    if (text[at] != '\\' || text[at + 1] != 'x' || high < 0 || low < 0) return std::nullopt;
    bytes.push_back(static_cast<char>(high * 16 + low));
  }
  return bytes;
}

namespace {

// A `bytes` array ([105,115,...]) as bytes; nullopt when absent or not all 0..255.
std::optional<std::string> bytes_array(const json::object& object) {
  const json::array* array = array_field(object, "bytes");
  if (!array) return std::nullopt;
  std::string bytes;
  bytes.reserve(array->size());
  for (const json::value& element : *array) {
    const auto byte = integer_of(element);
    if (!byte || *byte < 0 || *byte > 255) return std::nullopt;
    bytes.push_back(static_cast<char>(*byte));
  }
  return bytes;
}

// Byte offset in `text` of code point `index` (Python str indexing; an invalid byte counts as
// one code point), or npos when the text is shorter.
std::size_t byte_offset_of_code_point(std::string_view text, std::int64_t index) {
  std::size_t at = 0;
  for (std::int64_t seen = 0; seen < index; ++seen) {
    if (at >= text.size()) return std::string_view::npos;
    const auto lead = static_cast<unsigned char>(text[at]);
    std::size_t length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 1;
    std::size_t valid = 1;
    while (valid < length && at + valid < text.size() &&
           (static_cast<unsigned char>(text[at + valid]) & 0xC0) == 0x80) {
      ++valid;
    }
    at += valid == length ? length : 1;
  }
  return at;
}

}  // namespace

void ResponseDecoder::Impl::settle_bytes(Choice& choice, std::size_t first, std::optional<std::string_view> delta,
                                         const std::vector<std::int64_t>* text_offsets) {
  const std::size_t count = choice.tokens.size() - first;
  if (count == 0 || !delta) return;
  bool all_known = true;
  bool any_text = false;
  std::size_t known_bytes = 0;
  for (std::size_t i = 0; i < count; ++i) {
    all_known &= bytes_from[i] != BytesFrom::unknown;
    any_text |= bytes_from[i] == BytesFrom::token_text;
    known_bytes += choice.tokens[first + i].bytes.size();
  }
  if (all_known) {
    if (!any_text) return;  // byte arrays are the ground truth, whatever the text says
    if (known_bytes == delta->size()) {
      std::size_t at = 0;
      bool same = true;
      for (std::size_t i = 0; i < count && same; ++i) {
        const std::string& bytes = choice.tokens[first + i].bytes;
        same = delta->compare(at, bytes.size(), bytes) == 0;
        at += bytes.size();
      }
      if (same) return;
    }
  }
  if (count == 1) {
    choice.tokens[first].bytes.assign(*delta);
    return;
  }
  if (split_by_offsets(choice, first, count, *delta, text_offsets)) return;
  if (all_known) {
    if (!noted_text_mismatch) {
      noted_text_mismatch = true;
      note(where() + ": choice " + std::to_string(choice.index) +
           ": token texts differ from the text delta; kept the token texts");
    }
    return;
  }
  if (!noted_split_unknown) {
    noted_split_unknown = true;
    note(where() + ": choice " + std::to_string(choice.index) + ": " + std::to_string(count) +
         " tokens share one text delta with no per-token text; the text is on the first token");
  }
  choice.tokens[first].bytes.assign(*delta);
  for (std::size_t i = 1; i < count; ++i) choice.tokens[first + i].bytes.clear();
}

bool ResponseDecoder::Impl::split_by_offsets(Choice& choice, std::size_t first, std::size_t count,
                                             std::string_view delta, const std::vector<std::int64_t>* text_offsets) {
  if (!text_offsets || text_offsets->size() != count) return false;
  const std::int64_t base = (*text_offsets)[0];
  std::vector<std::size_t> cuts;
  cuts.reserve(count + 1);
  for (std::size_t i = 0; i < count; ++i) {
    const std::int64_t offset = (*text_offsets)[i];
    if (offset < base) return false;
    const std::size_t cut = byte_offset_of_code_point(delta, offset - base);
    if (cut == std::string_view::npos || (!cuts.empty() && cut < cuts.back())) return false;
    cuts.push_back(cut);
  }
  cuts.push_back(delta.size());
  for (std::size_t i = 0; i < count; ++i) {
    choice.tokens[first + i].bytes.assign(delta.substr(cuts[i], cuts[i + 1] - cuts[i]));
  }
  return true;
}

// A token spelled as text: "token_id:N" gives an id and unknown bytes; "bytes:\xNN..." (the
// OpenAI/tiktoken spelling of a piece of a UTF-8 character) gives those bytes.
BytesFrom ResponseDecoder::Impl::set_token_text(Token& token, std::string_view text) {
  if (const auto id = parse_token_id_string(text)) {
    token.id = *id;
    return BytesFrom::unknown;
  }
  if (auto bytes = parse_bytes_label(text)) {
    token.bytes = std::move(*bytes);
    return BytesFrom::bytes_array;
  }
  token.bytes.assign(text);
  return BytesFrom::token_text;
}

// A legacy top_logprobs entry, label: logprob, as an alternative.
void ResponseDecoder::Impl::set_label_alternative(Alternative& alternative, std::string_view label, double logprob) {
  if (const auto id = parse_token_id_string(label)) {
    alternative.id = *id;
  } else if (auto bytes = parse_bytes_label(label)) {
    alternative.bytes = std::move(*bytes);
  } else {
    alternative.bytes.assign(label);
  }
  alternative.logprob = to_float(logprob);
}

// Stable. A token's few alternatives (most servers send them best first already) are sorted in
// place: std::stable_sort allocates a temporary buffer on every call, per streamed token.
void ResponseDecoder::Impl::sort_best_first(std::span<Alternative> top) {
  const auto better = [](const Alternative& a, const Alternative& b) { return a.logprob > b.logprob; };
  constexpr std::size_t kInPlace = 32;
  if (top.size() > kInPlace) {
    std::stable_sort(top.begin(), top.end(), better);
    return;
  }
  for (std::size_t i = 1; i < top.size(); ++i) {
    if (!better(top[i], top[i - 1])) continue;
    Alternative moving = std::move(top[i]);
    std::size_t at = i;
    do {
      top[at] = std::move(top[at - 1]);
      --at;
    } while (at > 0 && better(moving, top[at - 1]));
    top[at] = std::move(moving);
  }
}

// Chat-shaped entries: [{token, logprob, bytes?, id?, top_logprobs: [...]}] (OpenAI chat, vLLM
// chat, llama.cpp on both /v1 endpoints and natively in completion_probabilities). llama.cpp
// spells it differently with post_sampling_probs ({prob, top_probs}) and before late 2024
// ({content, probs: [{tok_str, prob}]}); those are read too.
void ResponseDecoder::Impl::read_content_logprobs(Choice& choice, const json::array& entries,
                                                  std::int64_t offset_ns) {
  for (const json::value& entry_value : entries) {
    const json::object* entry = entry_value.if_object();
    if (!entry) continue;
    Token& token = add_token(choice, offset_ns, BytesFrom::unknown);
    BytesFrom& from = bytes_from.back();
    auto text = string_field(*entry, "token");
    if (!text) text = string_field(*entry, "content");
    if (text) from = set_token_text(token, *text);
    if (from != BytesFrom::unknown) {
      if (auto bytes = bytes_array(*entry)) {
        token.bytes = std::move(*bytes);
        from = BytesFrom::bytes_array;
      }
    }
    if (const json::value* id = field(*entry, "id")) token.id = token_id_of(*id);
    if (const auto logprob = logprob_of(*entry)) {
      token.has_logprob = true;
      token.logprob = *logprob;
    }
    const json::array* top = array_field(*entry, "top_logprobs");
    if (!top) top = array_field(*entry, "top_probs");
    if (!top) top = array_field(*entry, "probs");
    if (top) {
      for (const json::value& alternative_value : *top) {
        const json::object* alternative_object = alternative_value.if_object();
        if (!alternative_object) continue;
        Alternative& alternative = choice.add_alternative(token);
        auto alt_text = string_field(*alternative_object, "token");
        if (!alt_text) alt_text = string_field(*alternative_object, "tok_str");
        if (alt_text) {
          if (const auto id = parse_token_id_string(*alt_text)) {
            alternative.id = *id;
          } else if (auto bytes = bytes_array(*alternative_object)) {
            alternative.bytes = std::move(*bytes);
          } else {
            alternative.bytes.assign(*alt_text);
          }
        }
        if (const json::value* id = field(*alternative_object, "id")) alternative.id = token_id_of(*id);
        alternative.logprob = logprob_of(*alternative_object).value_or(0);
        // The old llama.cpp format gives the sampled token's probability only among these.
        if (!token.has_logprob && from != BytesFrom::unknown && alternative.bytes == token.bytes) {
          token.has_logprob = true;
          token.logprob = alternative.logprob;
        }
      }
      sort_best_first(choice.top(token));
    }
  }
}

// Legacy completions logprobs: parallel arrays.
void ResponseDecoder::Impl::read_legacy_logprobs(Choice& choice, const json::object& logprobs,
                                                 std::int64_t offset_ns) {
  const json::array* tokens = array_field(logprobs, "tokens");
  if (!tokens) return;
  const json::array* token_logprobs = array_field(logprobs, "token_logprobs");
  const json::array* top_logprobs = array_field(logprobs, "top_logprobs");
  for (std::size_t i = 0; i < tokens->size(); ++i) {
    Token& token = add_token(choice, offset_ns, BytesFrom::unknown);
    if (const json::string* text = (*tokens)[i].if_string()) {
      bytes_from.back() = set_token_text(token, *text);
    }
    if (token_logprobs && i < token_logprobs->size()) {
      if (const auto logprob = number_of((*token_logprobs)[i])) {
        token.has_logprob = true;
        token.logprob = to_float(*logprob);
      }
    }
    if (top_logprobs && i < top_logprobs->size()) {
      if (const json::object* top = (*top_logprobs)[i].if_object()) {
        for (const auto& [key, value] : *top) {
          set_label_alternative(choice.add_alternative(token), key, number_of(value).value_or(0));
        }
        sort_best_first(choice.top(token));
      }
    }
  }
}

// Ids from a plain array (vLLM return_token_ids, llama.cpp `tokens`) onto the tokens of this
// event: fills ids of tokens already read from logprobs, or makes one token per id.
void ResponseDecoder::Impl::apply_id_array(Choice& choice, std::size_t first, const json::array& ids,
                                           std::int64_t offset_ns) {
  token_ids_scratch.clear();
  for (const json::value& id : ids) token_ids_scratch.push_back(token_id_of(id));
  apply_id_array(choice, first, std::span<const std::int32_t>(token_ids_scratch), offset_ns);
}

// The same with the ids read already (token_id_of() of each element).
void ResponseDecoder::Impl::apply_id_array(Choice& choice, std::size_t first, std::span<const std::int32_t> ids,
                                           std::int64_t offset_ns) {
  const std::size_t have = choice.tokens.size() - first;
  if (have == 0) {
    for (const std::int32_t id : ids) add_token(choice, offset_ns, BytesFrom::unknown).id = id;
    return;
  }
  if (have != ids.size()) {
    note(where() + ": choice " + std::to_string(choice.index) + ": " + std::to_string(ids.size()) +
         " token ids for " + std::to_string(have) + " logprob tokens; ids ignored");
    return;
  }
  for (std::size_t i = 0; i < have; ++i) {
    Token& token = choice.tokens[first + i];
    const std::int32_t id = ids[i];
    if (token.id < 0) {
      token.id = id;
    } else if (id >= 0 && token.id != id) {
      note(where() + ": choice " + std::to_string(choice.index) + ": token id " + std::to_string(token.id) +
           " in logprobs but " + std::to_string(id) + " in token ids");
    }
  }
}

// `text_offset` as integers, or nullptr when absent or any element is not one (then no split by
// offsets is possible).
const std::vector<std::int64_t>* ResponseDecoder::Impl::integer_offsets(const json::array* offsets) {
  if (!offsets) return nullptr;
  text_offsets_scratch.clear();
  for (const json::value& element : *offsets) {
    const auto offset = integer_of(element);
    if (!offset) return nullptr;
    text_offsets_scratch.push_back(*offset);
  }
  return &text_offsets_scratch;
}

// One event's (or body's) worth of tokens for one choice: logprobs first, then id arrays,
// then the text itself as one delta token.
void ResponseDecoder::Impl::read_tokens(Choice& choice, std::optional<std::string_view> text,
                                        const json::value* logprobs, const json::array* ids, std::int64_t offset_ns) {
  const std::size_t first = choice.tokens.size();
  bytes_from.clear();
  const std::vector<std::int64_t>* text_offsets = nullptr;
  if (logprobs) {
    if (const json::object* object = logprobs->if_object()) {
      if (const json::array* content = array_field(*object, "content")) {
        read_content_logprobs(choice, *content, offset_ns);
      } else if (array_field(*object, "tokens")) {
        read_legacy_logprobs(choice, *object, offset_ns);
        text_offsets = integer_offsets(array_field(*object, "text_offset"));
      } else if (!object->contains("content") && !object->contains("tokens") && !object->contains("refusal")) {
        note(where() + ": choice " + std::to_string(choice.index) + ": unknown logprobs shape");
      }
    }
  }
  if (ids) apply_id_array(choice, first, *ids, offset_ns);
  if (choice.tokens.size() == first) {
    if (text && !text->empty()) {
      add_token(choice, offset_ns, BytesFrom::token_text).bytes.assign(*text);
    }
    return;
  }
  settle_bytes(choice, first, text, text_offsets);
}

}  // namespace retrace::llm
