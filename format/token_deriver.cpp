// Format 1.7's derived tokens: the process's deriver, the writer's test and the reader's rebuild
// (format/token_deriver.hpp says why and how).
#include "format/token_deriver.hpp"

#include <atomic>
#include <stdexcept>
#include <string>

namespace retrace {

namespace {

std::atomic<TokenDeriver> installed{nullptr};
thread_local const Exchange* said_from_events = nullptr;  // TokensFromEvents' exchange
thread_local DecodeWants said_wants;                      // and what its producer's decode kept
#ifdef NDEBUG
std::atomic<bool> checking{false};
#else
std::atomic<bool> checking{true};
#endif

// Every field of a choice but its tokens, and the count of those: what a 1.7 record stores of it.
bool same_shape(const Choice& derived, const Choice& stored, std::uint32_t token_count) {
  return derived.index == stored.index && derived.part == stored.part &&
         derived.tool_call == stored.tool_call && derived.tool_name == stored.tool_name &&
         derived.kind == stored.kind && derived.finish_reason == stored.finish_reason &&
         derived.values == stored.values && derived.tokens.size() == token_count;
}

// An exchange's events as views, for the deriver (thread_local: reused, never shared).
const std::vector<EventView>& views_of(const Exchange& exchange) {
  thread_local std::vector<EventView> views;
  views.resize(exchange.response.events.size());
  for (std::size_t i = 0; i < views.size(); ++i)
    views[i] = {exchange.response.events[i].offset_ns, exchange.response.events[i].data};
  return views;
}

TokenDeriver deriver_or_throw(std::uint64_t id) {
  const TokenDeriver deriver = installed_token_deriver();
  if (!deriver)
    throw NoTokenDeriver("exchange " + std::to_string(id) +
                         ": its tokens are derived from its events (format 1.7) and this program "
                         "installed no token deriver (llm::install_token_deriver() in its main)");
  return deriver;
}

// `choices` as a decode with `wants` makes them (llm/decoder.cpp's finish): no alternatives, logprob
// values 0, as asked.
void cut_to(std::vector<Choice>& choices, DecodeWants wants) {
  if (wants == DecodeWants{}) return;
  for (Choice& choice : choices) {
    if (!wants.alternatives) {
      choice.alternatives.clear();
      for (Token& token : choice.tokens) token.top_begin = token.top_count = 0;
    }
    if (!wants.logprob_values)
      for (Token& token : choice.tokens) token.logprob = 0;
  }
}

// The check of a producer's word: the full derivation (what a reader gets), cut to what the
// producer's decode kept, equals its choices.
bool same_as_said(const Exchange& exchange, std::vector<Choice>& derived) {
  if (said_wants == DecodeWants{}) return derived == exchange.choices;
  std::vector<Choice> cut = derived, live = exchange.choices;
  cut_to(cut, said_wants);
  cut_to(live, said_wants);
  return cut == live;
}

}  // namespace

void install_token_deriver(TokenDeriver deriver) { installed.store(deriver, std::memory_order_release); }

TokenDeriver installed_token_deriver() { return installed.load(std::memory_order_acquire); }

bool tokens_derivable(const Exchange& exchange, std::vector<Choice>& scratch) {
  const TokenDeriver deriver = installed_token_deriver();
  if (!deriver || !exchange.response.streamed || exchange.response.events.empty() ||
      exchange.choices.empty())
    return false;
  bool any_token = false;
  for (const Choice& choice : exchange.choices) any_token = any_token || !choice.tokens.empty();
  if (!any_token) return false;  // nothing to save
  const bool said = said_from_events == &exchange;
  if (said && !checking.load(std::memory_order_relaxed)) return true;
  deriver(exchange.dialect, views_of(exchange), scratch, DecodeWants{});
  const bool same = said ? same_as_said(exchange, scratch) : scratch == exchange.choices;
  if (said && !same)
    throw std::logic_error("exchange " + std::to_string(exchange.id) +
                           ": its producer said its tokens were decoded from exactly its events "
                           "(TokensFromEvents), but deriving them from those events gives others");
  return same;
}

TokensFromEvents::TokensFromEvents(const Exchange& exchange, bool said, DecodeWants live)
    : previous_(said_from_events), previous_wants_(said_wants) {
  said_from_events = said ? &exchange : nullptr;
  said_wants = live;
}

TokensFromEvents::~TokensFromEvents() {
  said_from_events = previous_;
  said_wants = previous_wants_;
}

bool written_whole(const Exchange& exchange, std::size_t event_bytes, const WriterOptions& options) {
  // An event's place in a record (its offset, its data's pointer and padding) is under 32 bytes; the
  // headers, labels, notes and the choices' shape (no tokens: derived) are counted with 1 MiB over.
  std::uint64_t bytes = exchange.request.body.size() + 33 * std::uint64_t{event_bytes} + (1u << 20);
  for (const auto* headers : {&exchange.request.headers, &exchange.response.headers})
    for (const HttpHeader& header : *headers) bytes += header.name.size() + header.value.size() + 16;
  for (const Label& label : exchange.labels) bytes += label.key.size() + label.value.size() + 16;
  if (exchange.expected) bytes += exchange.expected->size();
  bytes += exchange.session_id.size() + exchange.decode_note.size();
  return bytes < options.max_frame_bytes;
}

void check_tokens_from_events(bool on) { checking.store(on, std::memory_order_relaxed); }

void derive_tokens(Exchange& exchange, const std::vector<std::uint32_t>& token_counts, DecodeWants wants) {
  const TokenDeriver deriver = deriver_or_throw(exchange.id);
  thread_local std::vector<Choice> derived;
  deriver(exchange.dialect, views_of(exchange), derived, wants);
  bool same = derived.size() == exchange.choices.size() && token_counts.size() == derived.size();
  for (std::size_t c = 0; same && c < derived.size(); ++c)
    same = same_shape(derived[c], exchange.choices[c], token_counts[c]);
  exchange.choices.swap(derived);
  if (same) return;
  std::size_t stored_tokens = 0, derived_tokens = 0;
  for (std::uint32_t count : token_counts) stored_tokens += count;
  for (const Choice& choice : exchange.choices) derived_tokens += choice.tokens.size();
  if (!exchange.decode_note.empty()) exchange.decode_note += "; ";
  exchange.decode_note += "tokens derived from the events differ from what the writer derived (" +
                          std::to_string(derived_tokens) + " tokens in " +
                          std::to_string(exchange.choices.size()) + " parts, written: " +
                          std::to_string(stored_tokens) + " in " + std::to_string(token_counts.size()) +
                          "): this reader's decoder reads these events otherwise";
}

void derive_choices_of(std::uint64_t id, std::string_view dialect, const std::vector<EventView>& events,
                       std::vector<Choice>& choices, DecodeWants wants) {
  deriver_or_throw(id)(dialect, events, choices, wants);
}

}  // namespace retrace
