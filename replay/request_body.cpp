// A recorded request body made into the body replay sends, from one parse: see
// replay/request_body.hpp for the order of the edits and what is kept.
#include "replay/request_body.hpp"

#include <boost/json.hpp>

namespace retrace::replay {

namespace json = boost::json;

namespace {

// 1. "model" set to `model` where the dialect's body names one.
JsonEdit with_model(json::object& body, llm::Dialect dialect, const std::string& model) {
  if (!llm::names_model(dialect)) return JsonEdit::none;
  return set_member(body, "model", json::string(model));
}

}  // namespace

SentBody prepare_body(std::string_view method, std::string_view target, std::string_view key_target,
                      std::string_view body, const BodyEdits& edits) {
  // Most bodies are small: their nodes, and the edits' new ones, live in a stack buffer.
  unsigned char nodes[4096];
  json::monotonic_resource resource(nodes, sizeof nodes);
  json::error_code ec;
  json::value parsed = json::parse(body, ec, &resource);
  if (ec || body.empty()) {
    // Not JSON: 1-3 leave it as it is; --set/--unset refuse it (`parsed` is null), naming why.
    apply_body_overrides(parsed, edits.set, edits.unset);
    return {std::string(body), request_key(method, key_target, body)};
  }
  const auto dialect = llm::detect_dialect_of_parsed(target, parsed);
  JsonEdit edit = JsonEdit::none;
  std::size_t members = 0;
  if (auto* object = parsed.if_object()) {
    members = object->size();
    if (edits.model) edit |= with_model(*object, dialect, *edits.model);
    edit |= llm::add_token_id_fields(*object, dialect, edits.token_ids);
    edit |= llm::set_streaming(*object, dialect, edits.stream);
  }
  edit |= apply_body_overrides(parsed, edits.set, edits.unset);
  SentBody sent;
  sent.bytes = edit == JsonEdit::none ? std::string(body) : write_edited(body, parsed.get_object(), members, edit);
  sent.key = request_key_of_parsed(method, key_target, parsed);
  return sent;
}

}  // namespace retrace::replay
