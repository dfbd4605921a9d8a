// The Responses API's answers (sim/shape_out.hpp), in the shape of tests/data/openai/responses-*:
// streamed, response.created and response.in_progress; per output item output_item.added (and
// content_part.added), its deltas (reasoning_text.delta, output_text.delta,
// function_call_arguments.delta), its .done events and output_item.done; then response.completed
// (response.incomplete at max_output_tokens) with the whole response and its usage. Every event
// carries its sequence_number.
#include "sim/json_out.hpp"
#include "sim/shape_out.hpp"
#include "sim/tool_calls.hpp"

namespace retrace::sim {
namespace {

using Open = ShapeStream::Open;


void close_event(std::string& out, ShapeStream& stream) {
  out += ",\"sequence_number\":";
  put_number(out, stream.sequence++);
  out += "}\n\n";
}

// "rs_…", "msg_…", "fc_…": the response id's digits behind the item's prefix.
void put_item_id(std::string& out, const ShapeAnswer& answer, Open item) {
  std::string_view digits = answer.id;
  if (digits.starts_with("resp_")) digits.remove_prefix(5);
  out += item == Open::reasoning ? "\"rs_" : item == Open::tool ? "\"fc_" : "\"msg_";
  out += digits;
  out += '"';
}

std::string arguments(const ShapeAnswer& answer) { return tool_arguments_piece(answer.text, true, true); }

// A reasoning item's or a message's content part with `text`.
void put_content_part(std::string& out, Open item, std::string_view text) {
  out += item == Open::reasoning ? "{\"type\":\"reasoning_text\",\"text\":" : "{\"type\":\"output_text\",\"text\":";
  put_string(out, text);
  out += item == Open::reasoning ? "}" : ",\"annotations\":[]}";
}

// One output item; `done` with its whole text, else as output_item.added announces it.
void put_item(std::string& out, const ShapeAnswer& answer, Open item, bool done) {
  out += "{\"id\":";
  put_item_id(out, answer, item);
  const char* status = done ? "\"completed\"" : "\"in_progress\"";
  if (item == Open::reasoning) {
    out += ",\"type\":\"reasoning\",\"summary\":[],\"content\":[";
    if (done) put_content_part(out, item, answer.reasoning);
    out += "]}";
  } else if (item == Open::tool) {
    out += ",\"type\":\"function_call\",\"status\":";
    out += status;
    out += ",\"arguments\":";
    put_string(out, done ? arguments(answer) : std::string());
    out += ",\"call_id\":";
    put_string(out, answer.call_id);
    out += ",\"name\":";
    put_string(out, answer.tool_name);
    out += '}';
  } else {
    out += ",\"type\":\"message\",\"status\":";
    out += status;
    out += ",\"role\":\"assistant\",\"content\":[";
    if (done) put_content_part(out, item, answer.text);
    out += "]}";
  }
}

Open answer_item(const ShapeAnswer& answer) { return answer.tool_name.empty() ? Open::text : Open::tool; }

void put_usage_object(std::string& out, const ShapeAnswer& answer) {
  out += "{\"input_tokens\":";
  put_number(out, answer.input_tokens);
  out += ",\"input_tokens_details\":{\"cached_tokens\":";
  put_number(out, answer.cached_tokens.value_or(0));
  out += "},\"output_tokens\":";
  put_number(out, answer.output_tokens);
  out += ",\"output_tokens_details\":{\"reasoning_tokens\":";
  put_number(out, answer.reasoning_tokens);
  out += "},\"total_tokens\":";
  put_number(out, answer.input_tokens + answer.output_tokens);
  out += '}';
}

// The response object: in progress (no output yet) or done (every item, usage).
void put_response(std::string& out, const ShapeAnswer& answer, bool done) {
  const bool incomplete = done && answer.finish == FinishReason::length;
  out += "{\"id\":";
  put_string(out, answer.id);
  out += ",\"object\":\"response\",\"created_at\":";
  put_number(out, answer.created);
  out += ",\"status\":";
  out += !done ? "\"in_progress\"" : incomplete ? "\"incomplete\"" : "\"completed\"";
  out += ",\"error\":null,\"incomplete_details\":";
  out += incomplete ? "{\"reason\":\"max_output_tokens\"}" : "null";
  out += ",\"model\":";
  put_string(out, answer.model);
  out += ",\"output\":[";
  if (done) {
    if (answer.with_reasoning && !answer.reasoning.empty()) {
      put_item(out, answer, Open::reasoning, true);
      out += ',';
    }
    put_item(out, answer, answer_item(answer), true);
  }
  out += "],\"usage\":";
  if (done) put_usage_object(out, answer);
  else out += "null";
  out += '}';
}

// ,"item_id":…,"output_index":N of the open item's events.
void put_item_fields(std::string& out, const ShapeStream& stream, const ShapeAnswer& answer) {
  out += ",\"item_id\":";
  put_item_id(out, answer, stream.open);
  out += ",\"output_index\":";
  put_number(out, stream.opened - 1);
}

// response.output_item.added (announcing `item`) or response.output_item.done (whole).
void put_item_event(std::string& out, ShapeStream& stream, const ShapeAnswer& answer, Open item, bool done) {
  put_event_head(out, done ? "response.output_item.done" : "response.output_item.added");
  out += ",\"output_index\":";
  put_number(out, stream.opened - 1);
  out += ",\"item\":";
  put_item(out, answer, item, done);
  close_event(out, stream);
}

void open_item(std::string& out, ShapeStream& stream, const ShapeAnswer& answer, Open item) {
  stream.open = item;
  ++stream.opened;
  put_item_event(out, stream, answer, item, false);
  if (item == Open::tool) return;
  put_event_head(out, "response.content_part.added");
  put_item_fields(out, stream, answer);
  out += ",\"content_index\":0,\"part\":";
  put_content_part(out, item, {});
  close_event(out, stream);
}

void close_item(std::string& out, ShapeStream& stream, const ShapeAnswer& answer) {
  const Open item = stream.open;
  if (item == Open::tool) {
    put_event_head(out, "response.function_call_arguments.done");
    put_item_fields(out, stream, answer);
    out += ",\"arguments\":";
    put_string(out, arguments(answer));
    close_event(out, stream);
  } else {
    const bool reasoning = item == Open::reasoning;
    const std::string_view text = reasoning ? answer.reasoning : answer.text;
    put_event_head(out, reasoning ? "response.reasoning_text.done" : "response.output_text.done");
    put_item_fields(out, stream, answer);
    out += ",\"content_index\":0,\"text\":";
    put_string(out, text);
    if (!reasoning) out += ",\"logprobs\":[]";
    close_event(out, stream);
    put_event_head(out, "response.content_part.done");
    put_item_fields(out, stream, answer);
    out += ",\"content_index\":0,\"part\":";
    put_content_part(out, item, text);
    close_event(out, stream);
  }
  put_item_event(out, stream, answer, item, true);
  stream.open = Open::none;
}

// The text or tool item, after the reasoning item is closed.
void open_answer(std::string& out, ShapeStream& stream, const ShapeAnswer& answer) {
  if (stream.answer_opened) return;
  if (stream.open == Open::reasoning) close_item(out, stream, answer);
  open_item(out, stream, answer, answer_item(answer));
  stream.answer_opened = true;
}

class ResponsesWriter final : public ShapeWriter {
 public:
  void start(std::string& out, ShapeStream& stream, const ShapeAnswer& answer) const override {
    for (std::string_view type : {"response.created", "response.in_progress"}) {
      put_event_head(out, type);
      out += ",\"response\":";
      put_response(out, answer, false);
      close_event(out, stream);
    }
  }

  void piece(std::string& out, ShapeStream& stream, const ShapeAnswer& answer, ReasoningSplit piece,
             bool finished) const override {
    if (!piece.reasoning.empty()) {
      if (stream.open != Open::reasoning) open_item(out, stream, answer, Open::reasoning);
      put_event_head(out, "response.reasoning_text.delta");
      put_item_fields(out, stream, answer);
      out += ",\"content_index\":0,\"delta\":";
      put_string(out, piece.reasoning);
      close_event(out, stream);
    }
    const bool tool = !answer.tool_name.empty();
    if (piece.content.empty() && !(tool && finished)) return;
    const bool first = !stream.answer_opened;
    open_answer(out, stream, answer);
    if (tool) {
      put_event_head(out, "response.function_call_arguments.delta");
      put_item_fields(out, stream, answer);
      out += ",\"delta\":";
      put_string(out, tool_arguments_piece(piece.content, first, finished));
    } else {
      put_event_head(out, "response.output_text.delta");
      put_item_fields(out, stream, answer);
      out += ",\"content_index\":0,\"delta\":";
      put_string(out, piece.content);
      out += ",\"logprobs\":[]";
    }
    close_event(out, stream);
  }

  void end(std::string& out, ShapeStream& stream, const ShapeAnswer& answer) const override {
    open_answer(out, stream, answer);  // an answer of no text still has its item
    close_item(out, stream, answer);
    const bool incomplete = answer.finish == FinishReason::length;
    put_event_head(out, incomplete ? "response.incomplete" : "response.completed");
    out += ",\"response\":";
    put_response(out, answer, true);
    close_event(out, stream);
  }

  void error(std::string& out, ShapeStream& stream, std::string_view message) const override {
    put_event_head(out, "error");
    out += ",\"code\":\"server_error\",\"message\":";
    put_string(out, message);
    out += ",\"param\":null";
    close_event(out, stream);
  }

  void body(std::string& out, const ShapeAnswer& answer) const override { put_response(out, answer, true); }
};

}  // namespace

void put_event_head(std::string& out, std::string_view type) {
  out += "event: ";
  out += type;
  out += "\ndata: {\"type\":\"";
  out += type;
  out += '"';
}

const ShapeWriter& responses_writer() {
  static const ResponsesWriter writer;
  return writer;
}

const ShapeWriter* shape_writer(Endpoint endpoint) {
  if (endpoint == Endpoint::responses) return &responses_writer();
  if (endpoint == Endpoint::messages) return &messages_writer();
  return nullptr;
}

}  // namespace retrace::sim
