// Counting tokens with the target's own tokenizer, for `retrace import --tokenizer-url`.
//
// POST URL {"prompt": TEXT, "content": TEXT, "add_special_tokens": false}: vLLM and SGLang read
// "prompt" (and would add a BOS token without add_special_tokens false), llama.cpp reads "content"
// (and adds no BOS unless asked), `retrace serve` reads either. The count is the answer's "count"
// where given (vLLM, SGLang, retrace serve), else the length of its "tokens" array (llama.cpp).
#pragma once

#include <string_view>

#include "dataset/synthetic_prompt.hpp"

namespace retrace::net {

// A counter asking `url` (http[s]://host:port[/path]; no path means /tokenize). Throws
// std::invalid_argument for a malformed URL; the counter throws std::runtime_error naming the URL
// and what it answered when a count fails.
TokenCounter remote_token_counter(std::string_view url);

}  // namespace retrace::net
