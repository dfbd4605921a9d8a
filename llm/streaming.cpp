// Streaming on or off for a replayed OpenAI completions or chat request (replay --no-stream).
#include <boost/json.hpp>

#include "llm/llm.hpp"

namespace retrace::llm {

namespace json = boost::json;

std::string set_streaming(std::string_view body, Dialect dialect, bool stream) {
  if (dialect != Dialect::openai_completions && dialect != Dialect::openai_chat) return std::string(body);
  // Most bodies come back unchanged: parsed into a stack buffer, not node by node on the heap.
  unsigned char nodes[4096];
  json::monotonic_resource resource(nodes, sizeof nodes);
  json::error_code ec;
  json::value parsed = json::parse(body, ec, &resource);
  if (ec || !parsed.is_object()) return std::string(body);
  json::object& object = parsed.get_object();
  const json::value* current = object.if_contains("stream");
  bool streams = current && current->is_bool() && current->get_bool();
  const json::value* stream_options = object.if_contains("stream_options");
  if (!stream) {
    // OpenAI refuses stream_options on a request that does not stream.
    if (!streams && !stream_options) return std::string(body);
    object["stream"] = false;
    object.erase("stream_options");
    return json::serialize(parsed);
  }
  const json::value* include_usage =
      stream_options && stream_options->is_object() ? stream_options->get_object().if_contains("include_usage")
                                                    : nullptr;
  if (streams && include_usage && include_usage->is_bool() && include_usage->get_bool())
    return std::string(body);
  // Inserting "stream" may rehash the object: the pointers above are not used past this line.
  object["stream"] = true;
  json::value& options = object["stream_options"];
  if (!options.is_object()) options = json::object();
  options.get_object()["include_usage"] = true;
  return json::serialize(parsed);
}

}  // namespace retrace::llm
