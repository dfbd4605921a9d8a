// Streaming on or off for a replayed OpenAI completions or chat request (replay --no-stream).
#include <boost/json.hpp>

#include "base/json_edit.hpp"
#include "llm/llm.hpp"

namespace retrace::llm {

namespace json = boost::json;

JsonEdit set_streaming(json::object& body, Dialect dialect, bool stream) {
  if (dialect != Dialect::openai_completions && dialect != Dialect::openai_chat) return JsonEdit::none;
  const json::value* current = body.if_contains("stream");
  const bool streams = current && current->is_bool() && current->get_bool();
  const json::value* stream_options = body.if_contains("stream_options");
  if (!stream) {
    // OpenAI refuses stream_options on a request that does not stream.
    if (!streams && !stream_options) return JsonEdit::none;
    JsonEdit edit = set_member(body, "stream", false);
    if (body.erase("stream_options")) edit |= JsonEdit::changed;
    return edit;
  }
  const json::value* include_usage =
      stream_options && stream_options->is_object() ? stream_options->get_object().if_contains("include_usage")
                                                    : nullptr;
  if (streams && include_usage && include_usage->is_bool() && include_usage->get_bool()) return JsonEdit::none;
  // set_member may rehash the object: the pointers above are not used past this line.
  JsonEdit edit = set_member(body, "stream", true);
  if (auto* options = body.if_contains("stream_options"); options && options->is_object()) {
    edit |= set_member(options->get_object(), "include_usage", true) == JsonEdit::none ? JsonEdit::none
                                                                                       : JsonEdit::changed;
  } else {
    edit |= set_member(body, "stream_options", json::object{{"include_usage", true}});
  }
  return edit;
}

std::string set_streaming(std::string_view body, Dialect dialect, bool stream) {
  if (dialect != Dialect::openai_completions && dialect != Dialect::openai_chat) return std::string(body);
  // Most bodies come back unchanged: parsed into a stack buffer, not node by node on the heap.
  unsigned char nodes[4096];
  json::monotonic_resource resource(nodes, sizeof nodes);
  json::error_code ec;
  json::value parsed = json::parse(body, ec, &resource);
  if (ec || !parsed.is_object()) return std::string(body);
  json::object& object = parsed.get_object();
  const std::size_t members = object.size();
  const JsonEdit edit = set_streaming(object, dialect, stream);
  return write_edited(body, object, members, edit);
}

}  // namespace retrace::llm
