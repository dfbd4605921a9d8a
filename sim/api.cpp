// Reading the OpenAI request shapes (see api.hpp). Each field is checked as vLLM checks it, and a
// bad one is named in `param` with a message that says what it must be.
#include "sim/api.hpp"

#include <algorithm>
#include <cmath>

#include <boost/json.hpp>

#include "sim/api_fields.hpp"
#include "sim/json_out.hpp"

namespace retrace::sim {
namespace json = boost::json;

[[noreturn]] void reject(std::string param, std::string message) {
  throw ApiError{400, std::move(message), std::move(param), {}};
}

// ---------------------------------------------------------------------------------------------
// Typed field access: a field that is absent or null is not there.

const json::value* field(const json::object& body, std::string_view name) {
  const json::value* value = body.if_contains(name);
  return value && !value->is_null() ? value : nullptr;
}

std::optional<std::int64_t> integer_field(const json::object& body, std::string_view name,
                                          std::int64_t min, std::int64_t max) {
  const json::value* value = field(body, name);
  if (!value) return std::nullopt;
  std::int64_t number = 0;
  if (value->is_int64()) number = value->get_int64();
  else if (value->is_uint64()) number = value->get_uint64() > std::uint64_t(INT64_MAX) ? INT64_MAX : std::int64_t(value->get_uint64());
  else if (value->is_double() && std::floor(value->get_double()) == value->get_double() &&
           std::fabs(value->get_double()) < 9e15) number = std::int64_t(value->get_double());
  else reject(std::string(name), "'" + std::string(name) + "' must be an integer");
  if (number < min || number > max)
    reject(std::string(name), "'" + std::string(name) + "' must be between " + std::to_string(min) +
                                  " and " + std::to_string(max) + ", got " + std::to_string(number));
  return number;
}

std::optional<double> number_field(const json::object& body, std::string_view name, double min,
                                   double max) {
  const json::value* value = field(body, name);
  if (!value) return std::nullopt;
  if (!value->is_number()) reject(std::string(name), "'" + std::string(name) + "' must be a number");
  double number = value->to_number<double>();
  if (!(number >= min && number <= max))
    reject(std::string(name), "'" + std::string(name) + "' must be between " + std::to_string(min) +
                                  " and " + std::to_string(max));
  return number;
}

bool bool_field(const json::object& body, std::string_view name) {
  const json::value* value = field(body, name);
  if (!value) return false;
  if (!value->is_bool()) reject(std::string(name), "'" + std::string(name) + "' must be true or false");
  return value->get_bool();
}

json::value parse_object(std::string_view text, const ServeOptions& options) {
  boost::system::error_code ec;
  json::value document = json::parse(text, ec);
  if (ec)
    reject("", "request body is not valid JSON (" + ec.message() +
                   "); send a JSON object such as {\"model\": \"" + options.model_name +
                   "\", \"prompt\": \"Hello\"}");
  if (!document.is_object()) reject("", "request body must be a JSON object");
  return document;
}

void check_model(const json::object& body, const ServeOptions& options) {
  const json::value* model = field(body, "model");
  if (!model) return;
  if (!model->is_string()) reject("model", "'model' must be a string");
  const auto& more = options.more_model_names;
  if (model->get_string() != options.model_name &&
      std::find(more.begin(), more.end(), model->get_string()) == more.end())
    throw ApiError{404,
                   "The model `" + std::string(model->get_string()) +
                       "` does not exist. This server (retrace serve) serves `" + options.model_name +
                       "`; see GET /v1/models.",
                   "model", "model_not_found", "NotFoundError"};
}

namespace {

// ---------------------------------------------------------------------------------------------
// The steps of parse_request, in the order vLLM checks.

std::vector<TokenId> read_token_list(const json::array& list, const std::string& where, const Tokenizer& tokenizer) {
  std::vector<TokenId> tokens;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const json::value& item = list[i];
    if (!item.is_int64() || !tokenizer.valid(TokenId(item.get_int64())) || item.get_int64() > INT32_MAX)
      reject("prompt", "'" + where + "[" + std::to_string(i) + "]' must be a token id between 0 and " +
                           std::to_string(tokenizer.size() - 1));
    tokens.push_back(TokenId(item.get_int64()));
  }
  return tokens;
}

// Completions: `prompt` is a string, a list of strings, a list of token ids or a list of those.
void read_prompts(const json::object& body, const ParseContext& context, ApiRequest& request) {
  const Tokenizer& tokenizer = context.model.tokenizer();
  const json::value* prompt = field(body, "prompt");
  if (!prompt) reject("prompt", "missing required parameter 'prompt' (a string, a list of strings, or token ids)");
  auto add_text = [&](std::string_view text) {
    request.prompts.push_back(tokenizer.encode(text));
    if (const std::string* answer = context.answers.find_prompt(text))
      request.answers.emplace_back(tokenizer.encode(*answer));
    else
      request.answers.emplace_back();
  };
  auto add_tokens = [&](const json::array& list, const std::string& where) {
    request.prompts.push_back(read_token_list(list, where, tokenizer));
    request.answers.emplace_back();
  };
  if (prompt->is_string()) return add_text(prompt->get_string());
  if (!prompt->is_array() || prompt->get_array().empty())
    reject("prompt", "'prompt' must be a string, a non-empty list of strings, or a list of token ids");
  const json::array& list = prompt->get_array();
  if (list[0].is_string()) {
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (!list[i].is_string()) reject("prompt", "'prompt[" + std::to_string(i) + "]' must be a string like the others");
      add_text(list[i].get_string());
    }
  } else if (list[0].is_array()) {
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (!list[i].is_array()) reject("prompt", "'prompt[" + std::to_string(i) + "]' must be a list of token ids");
      add_tokens(list[i].get_array(), "prompt[" + std::to_string(i) + "]");
    }
  } else {
    add_tokens(list, "prompt");
  }
}

// Chat: `messages` rendered into one prompt.
void read_messages(const json::object& body, const ParseContext& context, ApiRequest& request) {
  const Tokenizer& tokenizer = context.model.tokenizer();
  const json::value* messages = body.if_contains("messages");
  if (!messages) reject("messages", "missing required parameter 'messages' (a list of {\"role\", \"content\"})");
  std::string param, message;
  auto parsed = parse_chat_messages(*messages, param, message);
  if (!parsed) reject(param, message);
  request.prompts.push_back(tokenizer.encode(render_chat(*parsed)));
  if (const std::string* answer = context.answers.find_messages(*parsed))
    request.answers.emplace_back(tokenizer.encode(*answer));
  else
    request.answers.emplace_back();
}

// max_tokens, checked with the longest prompt against max_model_len.
void read_lengths(const json::object& body, const ServeOptions& options, ApiRequest& request) {
  const bool chat = request.endpoint != Endpoint::completions;  // and the Responses and Messages APIs
  std::size_t longest_prompt = 0;
  for (const auto& prompt : request.prompts) longest_prompt = std::max(longest_prompt, prompt.size());
  const auto max_len = std::int64_t(options.max_model_len);
  if (std::int64_t(longest_prompt) >= max_len)
    reject(chat ? "messages" : "prompt",
           "This model's maximum context length is " + std::to_string(max_len) + " tokens, but the prompt has " +
               std::to_string(longest_prompt) + " tokens. Please shorten it.");
  const std::string_view max_name = request.endpoint == Endpoint::responses ? "max_output_tokens" : "max_tokens";
  std::optional<std::int64_t> max_tokens = integer_field(body, max_name, 1, INT32_MAX);
  if (request.endpoint == Endpoint::chat && !max_tokens)
    max_tokens = integer_field(body, "max_completion_tokens", 1, INT32_MAX);
  if (request.endpoint == Endpoint::messages && !max_tokens)
    reject("max_tokens", "missing required parameter 'max_tokens' (the Messages API needs it)");
  if (max_tokens && std::int64_t(longest_prompt) + *max_tokens > max_len)
    reject(std::string(max_name), "This model's maximum context length is " + std::to_string(max_len) +
                             " tokens. However, you requested " + std::to_string(longest_prompt + *max_tokens) +
                             " tokens (" + std::to_string(longest_prompt) + " in the prompt, " +
                             std::to_string(*max_tokens) + " in the completion). Please reduce max_tokens.");
  request.params.max_tokens = int(max_tokens.value_or(chat ? max_len - std::int64_t(longest_prompt) : 16));
}

void read_sampling(const json::object& body, std::uint64_t fallback_seed, ApiRequest& request) {
  request.params.temperature = float(number_field(body, "temperature", 0, 2).value_or(1.0));
  request.params.top_p = float(number_field(body, "top_p", 0, 1).value_or(1.0));
  if (request.params.top_p <= 0) reject("top_p", "'top_p' must be greater than 0 and at most 1");
  const bool classic = request.endpoint == Endpoint::chat || request.endpoint == Endpoint::completions;
  if (classic) request.n = int(integer_field(body, "n", 1, 128).value_or(1));
  if (auto seed = integer_field(body, "seed", INT64_MIN, INT64_MAX))
    request.params.seed = std::uint64_t(*seed);
  else
    request.params.seed = fallback_seed;
  request.params.ignore_eos = bool_field(body, "ignore_eos");
}

// "stop" (the Messages API: "stop_sequences"; the Responses API has none).
void read_stop(const json::object& body, ApiRequest& request) {
  if (request.endpoint == Endpoint::responses) return;
  const std::string name = request.endpoint == Endpoint::messages ? "stop_sequences" : "stop";
  const json::value* stop = field(body, name);
  if (!stop) return;
  auto add_stop = [&](const json::value& item) {
    if (!item.is_string() || item.get_string().empty())
      reject(name, "'" + name + "' must be a non-empty string or a list of non-empty strings");
    request.params.stop.emplace_back(item.get_string());
  };
  if (stop->is_array())
    for (const json::value& item : stop->get_array()) add_stop(item);
  else
    add_stop(*stop);
}

// Whether the conversation's last message is a tool's result: a model given it answers in text.
bool ends_with_tool_result(const json::object& body) {
  const json::value* messages = field(body, "messages");
  if (!messages || !messages->is_array() || messages->get_array().empty()) return false;
  const json::object* last = messages->get_array().back().if_object();
  const json::value* role = last ? last->if_contains("role") : nullptr;
  return role && role->is_string() && role->get_string() == "tool";
}

// Chat "tools": the first function's name, unless "tool_choice" is "none" or the last message is
// a tool's result (the call was made; the model answers with what it returned, as an agent's
// model does).
void read_tools(const json::object& body, ApiRequest& request) {
  const json::value* tools = field(body, "tools");
  if (!tools || request.endpoint != Endpoint::chat) return;
  if (!tools->is_array()) reject("tools", "'tools' must be a list of {\"type\": \"function\", \"function\": {...}}");
  if (tools->get_array().empty() || ends_with_tool_result(body)) return;
  const json::value* choice = field(body, "tool_choice");
  if (choice && choice->is_string() && choice->get_string() == "none") return;
  const json::object* tool = tools->get_array().front().if_object();
  const json::value* function = tool ? tool->if_contains("function") : nullptr;
  const json::value* name = function && function->is_object() ? function->get_object().if_contains("name") : nullptr;
  if (!name || !name->is_string() || name->get_string().empty())
    reject("tools", "every tool needs \"function\": {\"name\": ...}");
  request.tool_name = std::string(name->get_string());
}

void read_streaming(const json::object& body, ApiRequest& request) {
  request.stream = bool_field(body, "stream");
  if (request.endpoint == Endpoint::responses || request.endpoint == Endpoint::messages) return;
  if (const json::value* options = field(body, "stream_options")) {
    if (!request.stream) reject("stream_options", "'stream_options' is only allowed when 'stream' is true");
    if (!options->is_object()) reject("stream_options", "'stream_options' must be an object");
    request.include_usage = bool_field(options->get_object(), "include_usage");
  }
}

// Completions ask with logprobs=K; chat with logprobs=true and top_logprobs=K.
void read_logprobs(const json::object& body, ApiRequest& request) {
  if (request.endpoint == Endpoint::completions) {
    if (auto logprobs = integer_field(body, "logprobs", 0, 20)) {
      request.want_logprobs = true;
      request.params.top_logprobs = int(*logprobs);
    }
    if (bool_field(body, "echo")) reject("echo", "'echo' is not supported by retrace serve");
  } else {
    request.want_logprobs = bool_field(body, "logprobs");
    auto top = integer_field(body, "top_logprobs", 0, 20);
    if (top && !request.want_logprobs) reject("top_logprobs", "'top_logprobs' needs 'logprobs': true");
    if (request.want_logprobs) request.params.top_logprobs = int(top.value_or(0));
  }
  request.tokens_as_ids = bool_field(body, "return_tokens_as_token_ids");
  request.return_token_ids = bool_field(body, "return_token_ids");
}

void read_cache(const json::object& body, ApiRequest& request) {
  if (const json::value* salt = field(body, "cache_salt")) {
    if (!salt->is_string() || salt->get_string().empty())
      reject("cache_salt", "'cache_salt' must be a non-empty string");
    request.cache_salt = salt->get_string();
  }
  if (field(body, "cache_prompt")) request.cache_prompt = bool_field(body, "cache_prompt");
}

}  // namespace

std::string error_body(const ApiError& error) {
  std::string body = "{\"error\":{\"message\":";
  put_string(body, error.message);
  body += ",\"type\":";
  put_string(body, error.type);
  body += ",\"param\":";
  if (error.param.empty()) body += "null"; else put_string(body, error.param);
  body += ",\"code\":";
  if (error.code.empty()) body += "null"; else put_string(body, error.code);
  body += "}}";
  return body;
}

ApiRequest parse_request(Endpoint endpoint, std::string_view text, const ParseContext& context) {
  const json::value document = parse_object(text, context.options);
  const json::object& body = document.get_object();
  check_model(body, context.options);
  ApiRequest request;
  request.endpoint = endpoint;
  const bool classic = endpoint == Endpoint::completions || endpoint == Endpoint::chat;
  if (endpoint == Endpoint::completions) read_prompts(body, context, request);
  else if (endpoint == Endpoint::chat) read_messages(body, context, request);
  else if (endpoint == Endpoint::responses) read_responses_input(body, context, request);
  else read_messages_input(body, context, request);
  read_lengths(body, context.options, request);
  read_sampling(body, context.fallback_seed, request);
  read_stop(body, request);
  read_streaming(body, request);
  if (classic) read_logprobs(body, request);
  read_cache(body, request);
  if (classic) read_tools(body, request);
  else read_shape_tools(body, request);
  return request;
}

std::string parse_tokenize(std::string_view text, const ServeOptions& options) {
  const json::value document = parse_object(text, options);
  const json::object& body = document.get_object();
  check_model(body, options);
  for (std::string_view name : {"prompt", "content"})
    if (const json::value* value = field(body, name)) {
      if (!value->is_string()) reject(std::string(name), "'" + std::string(name) + "' must be a string");
      return std::string(value->get_string());
    }
  reject("prompt", "missing required parameter 'prompt' (the text to tokenize)");
}

}  // namespace retrace::sim
