// RowReader: the reading exchange_rows.hpp describes, over TraceReader's records
// (record_access.hpp). The request side is read_exchange's own (its requests_only reading); the
// outputs side is read here, field by field in trace.capnp's order, without the strings a row
// does not show.
#include "format/exchange_rows.hpp"

#include <string_view>

#include "format/parts.hpp"
#include "format/record_access.hpp"

namespace retrace {

using detail::ListBudget;

namespace {

template <class E>
bool known(E value) {
  return static_cast<unsigned>(value) < enum_count<E>;
}

// Whether sweep::cached_tokens_of's walk from the end counts `data` among the four it looks at
// whatever it holds: an object that does not mention a cache (one that does counts only when it
// parses).
bool counted_plain(std::string_view data) {
  return data.find('{') != std::string_view::npos && data.find("cache") == std::string_view::npos;
}

// The outputs side as exchange_rows.hpp says; false when the record needs read_exchange.
bool read_outputs_side(wire::Exchange::Reader in, Exchange& exchange, ListBudget& budget) {
  if (in.getTokensDerived()) return false;  // format 1.7: its tokens are rebuilt from its events
  auto choices = in.getChoices();
  if (choices.size() > kMaxParts) return false;
  for (auto choice : choices)
    if (!known(static_cast<Part>(choice.getPart())) || !known(static_cast<TokenKind>(choice.getKind())))
      return false;

  auto response = in.getResponse();
  exchange.response.status = response.getStatus();
  exchange.response.headers.clear();
  exchange.response.streamed = response.getStreamed();
  auto body = response.getBody();
  if (exchange.response.streamed) exchange.response.body.clear();
  else exchange.response.body.assign(reinterpret_cast<const char*>(body.begin()), body.size());
  auto events = response.getEvents();
  auto& into = exchange.response.events;
  const auto count = budget.take(events.size(), "events");
  // The events read from the end until four count: the earlier ones keep their arrival only.
  int plain = 0;
  auto first = count;
  std::size_t bytes = 0;
  for (; first > 0 && plain < 4; --first) {
    auto data = events[first - 1].getData();
    bytes += data.size();
    plain += counted_plain({reinterpret_cast<const char*>(data.begin()), data.size()});
  }
  into.clear();
  into.reserve(count, bytes);
  for (unsigned i = 0; i < count; ++i) {
    auto data = i < first ? capnp::Data::Reader() : events[i].getData();
    into.push_back(events[i].getOffsetNs(), {reinterpret_cast<const char*>(data.begin()), data.size()});
  }

  exchange.choices.resize(budget.take(choices.size(), "choices"));
  for (unsigned c = 0; c < choices.size(); ++c) {
    auto choice_in = choices[c];
    Choice& choice = exchange.choices[c];
    choice.index = choice_in.getIndex();
    choice.kind = static_cast<TokenKind>(choice_in.getKind());
    auto finish = choice_in.getFinishReason();
    choice.finish_reason.assign(finish.begin(), finish.size());
    choice.part = static_cast<Part>(choice_in.getPart());
    choice.tool_call = choice_in.getToolCall();
    choice.tool_name.clear();
    choice.values.clear();
    auto tokens = choice_in.getTokens();
    choice.tokens.resize(budget.take(tokens.size(), "tokens"));
    for (unsigned t = 0; t < tokens.size(); ++t) {
      auto token_in = tokens[t];
      Token& token = choice.tokens[t];
      detail::read_token_figures(token_in, token);
      token.bytes.clear();
      token.top_begin = token.top_count = 0;
    }
    choice.alternatives.clear();
  }

  auto usage = in.getUsage();
  exchange.usage.prompt_tokens = usage.getPromptTokens();
  exchange.usage.completion_tokens = usage.getCompletionTokens();
  exchange.usage.total_tokens = usage.getTotalTokens();
  exchange.usage.reasoning_tokens = usage.getReasoningTokens();
  return true;
}

// A row shows no alternatives: a derived exchange's tokens are derived without them.
ReaderOptions without_alternatives(ReaderOptions options) {
  options.derived = kNoAlternatives;
  return options;
}

}  // namespace

RowReader::RowReader(const std::filesystem::path& path, ReaderOptions options, std::uint16_t reads_through)
    : reader_(path, without_alternatives(options)), direct_(reader_.header().format_minor <= reads_through) {}

bool RowReader::next(Exchange& out) {
  if (!direct_) {
    const bool read = reader_.next(out);
    whole_ += read;
    return read;
  }
  return next_exchange_record(reader_, [&](wire::Exchange::Reader in, ListBudget& budget) {
    if (in.getTokensDerived()) {  // read whole at once: its request side is not read twice
      ++whole_;
      detail::read_exchange(in, out, budget, false, kNoAlternatives);
      return;
    }
    const ListBudget fresh = budget;
    // read_exchange's request-side reading empties the response and the choices: their storage
    // is set aside first and put back, so a reading loop allocates only while records grow.
    events_.swap(out.response.events);
    choices_.swap(out.choices);
    detail::read_exchange(in, out, budget, true);
    out.response.events.swap(events_);
    out.choices.swap(choices_);
    if (read_outputs_side(in, out, budget)) return;
    ++whole_;
    ListBudget again = fresh;
    detail::read_exchange(in, out, again, false, kNoAlternatives);
  });
}

}  // namespace retrace
