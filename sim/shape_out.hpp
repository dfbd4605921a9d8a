// The answers of the Responses API (/v1/responses, sim/responses_out.cpp) and Anthropic's Messages
// API (/v1/messages, sim/messages_out.cpp) as `retrace serve` writes them, from the same generation
// the chat completions' answers come from: with --reasoning, the reasoning first (a "reasoning"
// output item; a "thinking" content block), then the text (a "message" item; a "text" block), or,
// for a request with tools, a call of the first tool instead of the text (a "function_call" item;
// a "tool_use" block) whose arguments are {"text": "<generated text>"} as in chat (sim/tool_calls.hpp).
// Streamed, each answer is the API's event sequence (`event: TYPE` and `data: {"type": TYPE, ...}`),
// opening and closing each item or block as the generation crosses into it; tests/data/openai and
// tests/data/anthropic hold the real servers' bytes these follow.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sim/api.hpp"
#include "sim/engine.hpp"
#include "sim/reasoning.hpp"

namespace retrace::sim {

// What an answer is, so far (a stream's pieces) or whole (its end and a whole body).
struct ShapeAnswer {
  std::string_view id;          // the response's ("resp_…", "msg_…")
  std::int64_t created = 0;
  std::string_view model;
  std::string call_id;          // of the tool call
  std::string_view tool_name;   // "" = a text answer
  bool with_reasoning = false;  // --reasoning
  std::string_view reasoning, text;  // whole (end, body)
  FinishReason finish = FinishReason::none;
  std::string_view matched_stop;
  std::size_t input_tokens = 0, output_tokens = 0, reasoning_tokens = 0;
  std::optional<std::size_t> cached_tokens;  // with the prefix cache
};

// Which item or block of a streamed answer is open, and how many were opened.
struct ShapeStream {
  enum class Open : std::uint8_t { none, reasoning, text, tool };
  Open open = Open::none;
  int opened = 0;              // items/blocks opened so far; the open one's index is opened - 1
  bool answer_opened = false;  // the text or tool item/block was opened
  std::uint64_t sequence = 0;  // the Responses API's sequence_number of the next event
};

class ShapeWriter {
 public:
  virtual ~ShapeWriter() = default;
  // The events before the first piece.
  virtual void start(std::string& out, ShapeStream& stream, const ShapeAnswer& answer) const = 0;
  // The next released text, split into reasoning and content; `finished` on the last piece.
  virtual void piece(std::string& out, ShapeStream& stream, const ShapeAnswer& answer, ReasoningSplit piece,
                     bool finished) const = 0;
  // The events after the last piece: what is open is closed, then the answer's end with usage.
  virtual void end(std::string& out, ShapeStream& stream, const ShapeAnswer& answer) const = 0;
  // A failure after the 200 header (serve --fail-mid-stream): the API's error event.
  virtual void error(std::string& out, ShapeStream& stream, std::string_view message) const = 0;
  // The whole answer of a request that did not stream.
  virtual void body(std::string& out, const ShapeAnswer& answer) const = 0;
};

// The writer of the Responses or the Messages API; nullptr for completions and chat.
const ShapeWriter* shape_writer(Endpoint endpoint);

const ShapeWriter& responses_writer();
// `event: TYPE` and the start of its data, `data: {"type":"TYPE"` (the caller adds the fields and
// closes it), as both APIs frame their events.
void put_event_head(std::string& out, std::string_view type);
const ShapeWriter& messages_writer();

}  // namespace retrace::sim
