// `retrace serve`'s tool calls (sim/tool_calls.hpp).
#include "sim/tool_calls.hpp"

#include "sim/json_out.hpp"

namespace retrace::sim {

namespace {

constexpr std::string_view kOpen = R"({"text": ")";
constexpr std::string_view kClose = R"("})";

// `text` as the inside of a JSON string (what goes between the quotes of the arguments' value).
std::string escaped(std::string_view text) {
  std::string quoted;
  put_string(quoted, text);
  return quoted.substr(1, quoted.size() - 2);
}

void put_call_head(std::string& out, std::string_view id, std::string_view name) {
  out += "\"id\":";
  put_string(out, id);
  out += ",\"type\":\"function\",\"function\":{\"name\":";
  put_string(out, name);
}

}  // namespace

std::string tool_arguments_piece(std::string_view piece, bool first, bool last) {
  std::string arguments = first ? std::string(kOpen) : std::string();
  arguments += escaped(piece);
  if (last) arguments += kClose;
  return arguments;
}

void put_tool_call_delta(std::string& out, std::string_view id, std::string_view name, std::string_view piece,
                         bool first, bool last) {
  const std::string arguments = tool_arguments_piece(piece, first, last);
  out += "\"tool_calls\":[{\"index\":0,";
  if (first) {
    put_call_head(out, id, name);
    out += ',';
  } else {
    out += "\"function\":{";
  }
  out += "\"arguments\":";
  put_string(out, arguments);
  out += "}}]";
}

void put_tool_call_message(std::string& out, std::string_view id, std::string_view name, std::string_view text,
                           std::string_view reasoning, bool with_reasoning) {
  out += "{\"role\":\"assistant\",";
  if (with_reasoning) {
    out += "\"reasoning_content\":";
    put_string(out, reasoning);
    out += ',';
  }
  out += "\"content\":null,\"tool_calls\":[{";
  put_call_head(out, id, name);
  out += ",\"arguments\":";
  put_string(out, tool_arguments_piece(text, true, true));
  out += "}}]}";
}

}  // namespace retrace::sim
