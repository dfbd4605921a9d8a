// Internal to replay/: a recorded request body made into the body replay sends, and its key, from
// one parse of the recorded bytes.
//
// The edits, in this order, on the one parsed object:
//   1. model      the run's model (--model, or the one the preflight settled), for the dialects
//                 whose body names it (llm::names_model); nothing when it already names it.
//   2. token ids  --token-ids: the dialect's fields (llm::add_token_id_fields).
//   3. streaming  --stream/--no-stream: stream and stream_options (llm::set_streaming).
//   4. --unset, then --set (apply_body_overrides): last, so that the user's word wins over 1-3.
// The dialect, which 1-3 depend on, is read from the recorded target and body before any edit.
//
// What is kept (base/json_edit.hpp's rule, applied once to what the edits did together):
//   - a body no edit changes goes out byte for byte as recorded: one already as wanted, one that
//     is not JSON or not an object (1-3 leave it; 4 refuses it, naming --filter);
//   - a body that only gained top-level members goes out as recorded with them appended before
//     its closing brace (the client's spacing, number spellings and escapes kept);
//   - any other is serialised once from the edited object.
// The key is request_key's of the method, target and body sent, computed from the edited object
// (request_key_of_parsed) instead of parsing the bytes just written; a body that is not JSON is
// keyed by its bytes, as request_key keys it.
//
// Not here: live sessions (--session-mode live) substitute this run's answers into a turn's body
// later, in the worker, when the earlier turns have been answered (replay/plan.cpp,
// substitute_session_answers). That parses the prepared body once more, keeps its bytes when it
// substitutes nothing, and the worker keys the result again; it cannot be done here, since the
// answers do not exist yet.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json/fwd.hpp>

#include "base/json_edit.hpp"
#include "format/trace.hpp"
#include "llm/llm.hpp"

namespace retrace::replay {

// What replay changes in a body: the options and preflight facts the edits above read.
struct BodyEdits {
  std::optional<std::string> model;
  llm::TokenIdMode token_ids = llm::TokenIdMode::off;
  bool stream = true;
  std::vector<std::pair<std::string, std::string>> set;
  std::vector<std::string> unset;
};

struct SentBody {
  std::string bytes;
  RequestKey key;  // request_key(method, key_target, bytes)
};

// The body to send for a recorded `body` sent to `target` (the recorded one: what the dialect is
// read from), keyed with `method` and `key_target` (the target as sent). Throws
// std::invalid_argument when --set/--unset cannot apply (the body is not a JSON object, a path
// runs through a value that is not an object or array).
SentBody prepare_body(std::string_view method, std::string_view target, std::string_view key_target,
                      std::string_view body, const BodyEdits& edits);

// --set/--unset (replay.hpp, apply_body_overrides) on a body already parsed, which must be an
// object (else invalid_argument, as for the bytes); says what it did.
JsonEdit apply_body_overrides(boost::json::value& body, const std::vector<std::pair<std::string, std::string>>& set,
                              const std::vector<std::string>& unset);

}  // namespace retrace::replay
