// Tool calls of `retrace serve`: a chat request with "tools" (and no "tool_choice": "none", and
// not ending with a "tool" message, a call's result, which is answered in text) is answered with
// a call of its first function, as vLLM's tool parsers return one: the generated
// text becomes the call's arguments, {"text": "<generated text>"}, streamed as
// delta.tool_calls[{"index":0, ...}] — the first event names the function with its id, every
// event carries the next piece of the arguments — and finish_reason "tool_calls"; a whole message
// has "content": null and the call in "tool_calls". With --reasoning, the reasoning comes first
// as usual and the call's arguments are the rest. The Responses and Messages APIs call the same
// way (a function_call item, a tool_use block: sim/shape_out.hpp), with tool_arguments_piece.
#pragma once

#include <string>
#include <string_view>

namespace retrace::sim {

// The call's arguments' text for the next generated `piece` (JSON-escaped into the arguments'
// string): `first` opens them, `last` closes them; first and last: the whole arguments. The
// Responses API streams these as function_call_arguments deltas, the Messages API as input_json_delta.
std::string tool_arguments_piece(std::string_view piece, bool first, bool last);

// The "tool_calls" field of one streamed delta: `piece` is the next generated text (JSON-escaped
// here into the arguments); `first` adds the id, type and name and opens the arguments; `last`
// closes them.
void put_tool_call_delta(std::string& out, std::string_view id, std::string_view name, std::string_view piece,
                         bool first, bool last);
// A whole message's {"role":"assistant","content":null,"tool_calls":[...]} with `text` as the
// arguments' text; a non-empty `reasoning` goes first as reasoning_content.
void put_tool_call_message(std::string& out, std::string_view id, std::string_view name, std::string_view text,
                           std::string_view reasoning, bool with_reasoning);

}  // namespace retrace::sim
