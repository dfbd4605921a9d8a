// --sample F: which sessions record keeps. A session is named by the value of --session-header
// when the request carries it, else by its first user message (every turn of a chat repeats it,
// so all the turns of one conversation share it), else by the whole request (method, target and
// body: a request of its own). The name is hashed with XXH3-64 seeded by --seed, and the session
// is kept when the hash falls in the lowest fraction F of the 64-bit range: a pure function of
// (name, seed, F), so a restarted record with the same seed keeps the same sessions, and raising
// F only adds sessions to those kept.
//
// The first user message: the `content` of the first element of `messages` whose role is "user"
// (chat completions, Anthropic Messages), else the first such item of `input`, or `input` itself
// when it is a string (Responses API), else `prompt` (completions); as its JSON text, so a
// content of parts counts too. Decided on the proxy worker before the request is forwarded; a
// request not kept is relayed untouched and nothing of it is captured.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace retrace::record {

class SessionSampler {
 public:
  // `fraction` in [0, 1] (the CLI checks it).
  SessionSampler(double fraction, std::uint64_t seed);

  bool samples_all() const { return all_; }
  // Whether the session named `name` is kept.
  bool keeps(std::string_view name) const;
  // Whether a request is kept: by `session` (the --session-header value, "" when absent), else
  // by the first user message of `body`, else by the whole request.
  bool keeps_request(std::string_view session, std::string_view method, std::string_view target,
                     std::string_view body) const;

 private:
  std::uint64_t seed_;
  std::uint64_t threshold_;  // kept when hash < threshold_ (unless all_)
  bool all_;
};

// The first user message of a request body as JSON text (see above); "" when it has none or is
// not JSON.
std::string first_user_message(std::string_view body);

}  // namespace retrace::record
