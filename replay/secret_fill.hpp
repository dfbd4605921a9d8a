// Internal to replay/: --set-secret FIELD=ENV. A recorded body holds "[redacted]" where record
// found a secret (format/redaction.hpp); replay sends it so unless told a real value, which it
// takes from the environment, never from a file or the command line, and never writes: the run's
// trace keeps the marker (the body as prepared, before the fill), the plan and settings the
// variable's name.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace retrace::replay {

// FIELD and the value of ENV, in the order given.
using SecretFills = std::vector<std::pair<std::string, std::string>>;

// "FIELD=ENV" read: the variable must be set and not empty. Throws std::invalid_argument naming
// --set-secret and what to write instead.
std::pair<std::string, std::string> read_secret_fill(std::string_view assignment);

// `body` with every string value that is the marker, under a member named one of the FIELDs (its
// name as JSON decodes it, at any depth of a JSON body), replaced by that field's value; nullopt
// when nothing was replaced (not JSON, no such member, no marker there).
std::optional<std::string> fill_secrets(std::string_view body, const SecretFills& fills);

// True when a request as sent would still carry the marker (in its body or target): what a run
// counts and says once ("N requests were sent with redacted values").
bool sends_redaction_marker(std::string_view target, std::string_view body);

}  // namespace retrace::replay
