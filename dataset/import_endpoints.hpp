// Where `retrace import` sends a dataset's lines (--endpoint) and the request body each becomes:
//   chat         /v1/chat/completions  {"messages": [...]}                 limit "max_tokens"
//   completions  /v1/completions       {"prompt": "..."}                   limit "max_tokens"
//   responses    /v1/responses         {"input": "..." | [messages]}       limit "max_output_tokens"
//   messages     /v1/messages          {"system"?, "messages": [...]}      limit "max_tokens" (required there)
//                                      (system messages become "system": the Messages API has no such role)
//   embeddings   /v1/embeddings        {"input": "..."}                    no limit, no temperature
// Every body but embeddings gets "temperature": 0 unless its model refuses one (rejects_temperature).
#pragma once

#include <optional>
#include <string_view>

#include <boost/json.hpp>

namespace retrace {

enum class ImportEndpoint { chat, completions, responses, messages, embeddings };

// nullopt for a name that is none of the five.
std::optional<ImportEndpoint> import_endpoint(std::string_view name);
std::string_view endpoint_path(ImportEndpoint endpoint);
// The endpoint a request to `path` is for (nullopt: another path, e.g. an OpenAI Batch line's url).
std::optional<ImportEndpoint> endpoint_of_path(std::string_view path);

// True for a model that refuses a "temperature" other than its default (OpenAI's reasoning
// models: o1, o3, o4-mini, ..., gpt-5 but not gpt-5-chat; a "provider/" prefix is skipped): import
// gives their bodies no default temperature (a line's own is kept).
bool rejects_temperature(std::string_view model);

// A "prompt" line's and a "messages" line's content into `body`. Throws TraceError when the
// endpoint takes no such line (messages for completions or embeddings).
void put_prompt(boost::json::object& body, ImportEndpoint endpoint, const boost::json::value& prompt);
void put_messages(boost::json::object& body, ImportEndpoint endpoint, const boost::json::array& messages);

}  // namespace retrace
