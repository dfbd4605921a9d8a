// Anthropic's Messages API answers (sim/shape_out.hpp), in the shape of tests/data/anthropic/*:
// streamed, message_start; per content block content_block_start, its content_block_delta events
// (thinking_delta, text_delta, input_json_delta) and content_block_stop; then message_delta with
// the stop_reason and usage, and message_stop. Whole: the content blocks, stop_reason and usage.
#include "sim/json_out.hpp"
#include "sim/shape_out.hpp"
#include "sim/tool_calls.hpp"

namespace retrace::sim {
namespace {

using Open = ShapeStream::Open;


void close_event(std::string& out) { out += "}\n\n"; }

Open answer_block(const ShapeAnswer& answer) { return answer.tool_name.empty() ? Open::text : Open::tool; }

// "end_turn", "max_tokens", "stop_sequence" or "tool_use", and the stop sequence (or null).
void put_stop(std::string& out, const ShapeAnswer& answer) {
  out += "\"stop_reason\":";
  if (answer.finish == FinishReason::none) out += "null";
  else if (!answer.tool_name.empty()) out += "\"tool_use\"";
  else if (answer.finish == FinishReason::length) out += "\"max_tokens\"";
  else if (!answer.matched_stop.empty()) out += "\"stop_sequence\"";
  else out += "\"end_turn\"";
  out += ",\"stop_sequence\":";
  if (answer.finish == FinishReason::stop && !answer.matched_stop.empty() && answer.tool_name.empty())
    put_string(out, answer.matched_stop);
  else
    out += "null";
}

void put_usage_object(std::string& out, const ShapeAnswer& answer, std::size_t output_tokens) {
  out += "{\"input_tokens\":";
  put_number(out, answer.input_tokens);
  if (answer.cached_tokens) {
    out += ",\"cache_read_input_tokens\":";
    put_number(out, *answer.cached_tokens);
  }
  out += ",\"output_tokens\":";
  put_number(out, output_tokens);
  out += '}';
}

// A content block, empty (as content_block_start opens it) or whole.
void put_block(std::string& out, const ShapeAnswer& answer, Open block, bool whole) {
  if (block == Open::reasoning) {
    out += "{\"type\":\"thinking\",\"thinking\":";
    put_string(out, whole ? answer.reasoning : std::string_view());
    out += whole ? ",\"signature\":\"\"}" : "}";  // content_block_start opens it without one
  } else if (block == Open::tool) {
    out += "{\"type\":\"tool_use\",\"id\":";
    put_string(out, answer.call_id);
    out += ",\"name\":";
    put_string(out, answer.tool_name);
    out += ",\"input\":";
    out += whole ? tool_arguments_piece(answer.text, true, true) : std::string("{}");
    out += '}';
  } else {
    out += "{\"type\":\"text\",\"text\":";
    put_string(out, whole ? answer.text : std::string_view());
    out += '}';
  }
}

void open_block(std::string& out, ShapeStream& stream, const ShapeAnswer& answer, Open block) {
  stream.open = block;
  put_event_head(out, "content_block_start");
  out += ",\"index\":";
  put_number(out, stream.opened++);
  out += ",\"content_block\":";
  put_block(out, answer, block, false);
  close_event(out);
}

void close_block(std::string& out, ShapeStream& stream) {
  put_event_head(out, "content_block_stop");
  out += ",\"index\":";
  put_number(out, stream.opened - 1);
  close_event(out);
  stream.open = Open::none;
}

void put_delta(std::string& out, const ShapeStream& stream, std::string_view type, std::string_view field,
               std::string_view text) {
  put_event_head(out, "content_block_delta");
  out += ",\"index\":";
  put_number(out, stream.opened - 1);
  out += ",\"delta\":{\"type\":\"";
  out += type;
  out += "\",\"";
  out += field;
  out += "\":";
  put_string(out, text);
  out += '}';
  close_event(out);
}

void open_answer(std::string& out, ShapeStream& stream, const ShapeAnswer& answer) {
  if (stream.answer_opened) return;
  if (stream.open == Open::reasoning) close_block(out, stream);
  open_block(out, stream, answer, answer_block(answer));
  stream.answer_opened = true;
}

class MessagesWriter final : public ShapeWriter {
 public:
  void start(std::string& out, ShapeStream&, const ShapeAnswer& answer) const override {
    put_event_head(out, "message_start");
    out += ",\"message\":{\"id\":";
    put_string(out, answer.id);
    out += ",\"type\":\"message\",\"role\":\"assistant\",\"model\":";
    put_string(out, answer.model);
    out += ",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":";
    put_usage_object(out, answer, 0);
    out += '}';
    close_event(out);
  }

  void piece(std::string& out, ShapeStream& stream, const ShapeAnswer& answer, ReasoningSplit piece,
             bool finished) const override {
    if (!piece.reasoning.empty()) {
      if (stream.open != Open::reasoning) open_block(out, stream, answer, Open::reasoning);
      put_delta(out, stream, "thinking_delta", "thinking", piece.reasoning);
    }
    const bool tool = !answer.tool_name.empty();
    if (piece.content.empty() && !(tool && finished)) return;
    const bool first = !stream.answer_opened;
    open_answer(out, stream, answer);
    if (tool)
      put_delta(out, stream, "input_json_delta", "partial_json", tool_arguments_piece(piece.content, first, finished));
    else
      put_delta(out, stream, "text_delta", "text", piece.content);
  }

  void end(std::string& out, ShapeStream& stream, const ShapeAnswer& answer) const override {
    open_answer(out, stream, answer);  // an answer of no text still has its block
    close_block(out, stream);
    put_event_head(out, "message_delta");
    out += ",\"delta\":{";
    put_stop(out, answer);
    out += "},\"usage\":{\"output_tokens\":";
    put_number(out, answer.output_tokens);
    out += '}';
    close_event(out);
    put_event_head(out, "message_stop");
    close_event(out);
  }

  void error(std::string& out, ShapeStream&, std::string_view message) const override {
    put_event_head(out, "error");
    out += ",\"error\":{\"type\":\"api_error\",\"message\":";
    put_string(out, message);
    out += '}';
    close_event(out);
  }

  void body(std::string& out, const ShapeAnswer& answer) const override {
    out += "{\"id\":";
    put_string(out, answer.id);
    out += ",\"type\":\"message\",\"role\":\"assistant\",\"model\":";
    put_string(out, answer.model);
    out += ",\"content\":[";
    if (answer.with_reasoning && !answer.reasoning.empty()) {
      put_block(out, answer, Open::reasoning, true);
      out += ',';
    }
    put_block(out, answer, answer_block(answer), true);
    out += "],";
    put_stop(out, answer);
    out += ",\"usage\":";
    put_usage_object(out, answer, answer.output_tokens);
    out += '}';
  }
};

}  // namespace

const ShapeWriter& messages_writer() {
  static const MessagesWriter writer;
  return writer;
}

}  // namespace retrace::sim
