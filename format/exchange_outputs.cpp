// An exchange's outputs (trace.hpp's ExchangeOutputs): what diff's summaries read, taken from a
// whole exchange. TraceReader::next(ExchangeOutputs&) reads the same straight from a record
// (wire.cpp's read_outputs).
#include "format/trace.hpp"
#include "format/wire.hpp"

namespace retrace {

void outputs_of(const Exchange& exchange, ExchangeOutputs& out) {
  out.id = exchange.id;
  out.source_id = exchange.source_id;
  out.key = exchange.key;
  out.error = exchange.error;
  out.expected = exchange.expected;
  out.dialect = exchange.dialect;
  out.method = exchange.request.method;
  out.target = exchange.request.target;
  out.in_flight_at_send = exchange.in_flight_at_send;
  out.cached_tokens = exchange.server.cached_tokens;
  out.preemptions = exchange.server_state.preemptions;
  detail::choice_outputs(exchange.choices, out.choices);
}

namespace detail {

void choice_outputs(const std::vector<Choice>& choices, std::vector<ChoiceOutput>& out) {
  out.resize(choices.size());
  for (std::size_t c = 0; c < choices.size(); ++c) {
    const Choice& choice = choices[c];
    ChoiceOutput& output = out[c];
    output.index = choice.index;
    output.part = choice.part;
    output.tool_call = choice.tool_call;
    output.tool_name = choice.tool_name;
    output.values = choice.values;
    output.kind = choice.kind;
    output.bytes.clear();
    output.ids.clear();
    for (const Token& token : choice.tokens) {
      output.bytes += token.bytes;
      output.ids.push_back(token.id);
    }
  }
}

}  // namespace detail

}  // namespace retrace
