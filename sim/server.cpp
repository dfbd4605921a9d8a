// `retrace serve` (see server.hpp): HTTP sessions, the OpenAI request and response shapes, the
// continuous-batching scheduler, and the metrics, all on one io_context thread.
#include "sim/server.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <csignal>
#include <ctime>
#include <deque>
#include <memory>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include "net/url.hpp"
#include "sim/engine.hpp"
#include "version.hpp"

namespace retrace::sim {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------------------------------------
// JSON output. Responses are written by hand: the streaming path formats one event per token and
// must not allocate per token.

void put_string(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  std::size_t plain_from = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(text.data() + plain_from, i - plain_from);
    plain_from = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 15];
    }
  }
  out.append(text.data() + plain_from, text.size() - plain_from);
  out += '"';
}

template <typename Number>
void put_number(std::string& out, Number value) {
  char digits[32];
  auto result = std::to_chars(digits, digits + sizeof digits, value);
  out.append(digits, result.ptr);
}

void put_logprob(std::string& out, float logprob) {
  put_number(out, std::max(logprob, -9999.0f));  // vLLM's clamp, so -inf never reaches JSON
}

bool valid_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    auto c = static_cast<unsigned char>(text[i]);
    std::size_t length = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (length == 0 || i + length > text.size()) return false;
    for (std::size_t k = 1; k < length; ++k)
      if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) return false;
    i += length;
  }
  return true;
}

// A token as logprobs name it: its text; "token_id:N" with vLLM's return_tokens_as_token_ids;
// "bytes:\xNN" (tiktoken's convention) for a piece of a UTF-8 character.
void put_token_label(std::string& out, const Tokenizer& tokenizer, TokenId token, bool as_ids) {
  if (as_ids) {
    out += "\"token_id:";
    put_number(out, token);
    out += '"';
    return;
  }
  std::string_view bytes = tokenizer.token_bytes(token);
  if (valid_utf8(bytes)) return put_string(out, bytes);
  static constexpr char kHex[] = "0123456789abcdef";
  out += "\"bytes:";
  for (char c : bytes) {
    out += "\\\\x";
    out += kHex[static_cast<unsigned char>(c) >> 4];
    out += kHex[static_cast<unsigned char>(c) & 15];
  }
  out += '"';
}

void put_token_bytes(std::string& out, const Tokenizer& tokenizer, TokenId token) {
  out += '[';
  bool first = true;
  for (char c : tokenizer.token_bytes(token)) {
    if (!first) out += ',';
    first = false;
    put_number(out, int(static_cast<unsigned char>(c)));
  }
  out += ']';
}

void put_token_ids(std::string& out, std::span<const TokenId> tokens) {
  out += '[';
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (i) out += ',';
    put_number(out, tokens[i]);
  }
  out += ']';
}

// ---------------------------------------------------------------------------------------------
// Requests

enum class Endpoint : std::uint8_t { completions, chat };

struct ApiError {
  unsigned status;
  std::string message;
  std::string param;  // "" = null
  std::string code;   // "" = null
  std::string type = "invalid_request_error";
};

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

[[noreturn]] void reject(std::string param, std::string message) {
  throw ApiError{400, std::move(message), std::move(param), {}};
}

struct ApiRequest {
  Endpoint endpoint = Endpoint::completions;
  bool stream = false;
  bool include_usage = false;
  int n = 1;
  SamplingParams params;
  bool want_logprobs = false;     // completions: logprobs=K; chat: logprobs=true
  bool tokens_as_ids = false;     // vLLM return_tokens_as_token_ids
  bool return_token_ids = false;  // vLLM return_token_ids
  std::vector<std::vector<TokenId>> prompts;
  std::vector<std::optional<std::vector<TokenId>>> answers;  // per prompt
};

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

struct ParseContext {
  const Model& model;
  const AnswerBook& answers;
  const ServeOptions& options;
  std::uint64_t fallback_seed;  // for sampling without a seed
};

ApiRequest parse_request(Endpoint endpoint, std::string_view text, const ParseContext& context) {
  boost::system::error_code ec;
  json::value document = json::parse(text, ec);
  if (ec)
    reject("", "request body is not valid JSON (" + ec.message() +
                   "); send a JSON object such as {\"model\": \"" + context.options.model_name +
                   "\", \"prompt\": \"Hello\"}");
  const json::object* body = document.if_object();
  if (!body) reject("", "request body must be a JSON object");

  if (const json::value* model = field(*body, "model")) {
    if (!model->is_string()) reject("model", "'model' must be a string");
    if (model->get_string() != context.options.model_name)
      throw ApiError{404,
                     "The model `" + std::string(model->get_string()) +
                         "` does not exist. This server (retrace serve) serves `" +
                         context.options.model_name + "`; see GET /v1/models.",
                     "model", "model_not_found", "NotFoundError"};
  }

  ApiRequest request;
  request.endpoint = endpoint;
  const Tokenizer& tokenizer = context.model.tokenizer();

  if (endpoint == Endpoint::completions) {
    const json::value* prompt = field(*body, "prompt");
    if (!prompt) reject("prompt", "missing required parameter 'prompt' (a string, a list of strings, or token ids)");
    auto add_text = [&](std::string_view text) {
      request.prompts.push_back(tokenizer.encode(text));
      if (const std::string* answer = context.answers.find_prompt(text))
        request.answers.emplace_back(tokenizer.encode(*answer));
      else
        request.answers.emplace_back();
    };
    auto token_list = [&](const json::array& list, const std::string& where) {
      std::vector<TokenId> tokens;
      for (std::size_t i = 0; i < list.size(); ++i) {
        const json::value& item = list[i];
        if (!item.is_int64() || !tokenizer.valid(TokenId(item.get_int64())) || item.get_int64() > INT32_MAX)
          reject("prompt", "'" + where + "[" + std::to_string(i) + "]' must be a token id between 0 and " +
                               std::to_string(tokenizer.size() - 1));
        tokens.push_back(TokenId(item.get_int64()));
      }
      return tokens;
    };
    if (prompt->is_string()) {
      add_text(prompt->get_string());
    } else if (prompt->is_array() && !prompt->get_array().empty()) {
      const json::array& list = prompt->get_array();
      if (list[0].is_string()) {
        for (std::size_t i = 0; i < list.size(); ++i) {
          if (!list[i].is_string()) reject("prompt", "'prompt[" + std::to_string(i) + "]' must be a string like the others");
          add_text(list[i].get_string());
        }
      } else if (list[0].is_array()) {
        for (std::size_t i = 0; i < list.size(); ++i) {
          if (!list[i].is_array()) reject("prompt", "'prompt[" + std::to_string(i) + "]' must be a list of token ids");
          request.prompts.push_back(token_list(list[i].get_array(), "prompt[" + std::to_string(i) + "]"));
          request.answers.emplace_back();
        }
      } else {
        request.prompts.push_back(token_list(list, "prompt"));
        request.answers.emplace_back();
      }
    } else {
      reject("prompt", "'prompt' must be a string, a non-empty list of strings, or a list of token ids");
    }
  } else {
    const json::value* messages = body->if_contains("messages");
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

  std::size_t longest_prompt = 0;
  for (const auto& prompt : request.prompts) longest_prompt = std::max(longest_prompt, prompt.size());
  const auto max_len = std::int64_t(context.options.max_model_len);
  if (std::int64_t(longest_prompt) >= max_len)
    reject(endpoint == Endpoint::chat ? "messages" : "prompt",
           "This model's maximum context length is " + std::to_string(max_len) + " tokens, but the prompt has " +
               std::to_string(longest_prompt) + " tokens. Please shorten it.");
  std::optional<std::int64_t> max_tokens = integer_field(*body, "max_tokens", 1, INT32_MAX);
  if (endpoint == Endpoint::chat && !max_tokens)
    max_tokens = integer_field(*body, "max_completion_tokens", 1, INT32_MAX);
  if (max_tokens && std::int64_t(longest_prompt) + *max_tokens > max_len)
    reject("max_tokens", "This model's maximum context length is " + std::to_string(max_len) +
                             " tokens. However, you requested " + std::to_string(longest_prompt + *max_tokens) +
                             " tokens (" + std::to_string(longest_prompt) + " in the prompt, " +
                             std::to_string(*max_tokens) + " in the completion). Please reduce max_tokens.");
  request.params.max_tokens =
      int(max_tokens.value_or(endpoint == Endpoint::completions ? 16 : max_len - std::int64_t(longest_prompt)));

  request.params.temperature = float(number_field(*body, "temperature", 0, 2).value_or(1.0));
  request.params.top_p = float(number_field(*body, "top_p", 0, 1).value_or(1.0));
  if (request.params.top_p <= 0) reject("top_p", "'top_p' must be greater than 0 and at most 1");
  request.n = int(integer_field(*body, "n", 1, 128).value_or(1));
  if (auto seed = integer_field(*body, "seed", INT64_MIN, INT64_MAX))
    request.params.seed = std::uint64_t(*seed);
  else
    request.params.seed = context.fallback_seed;
  request.params.ignore_eos = bool_field(*body, "ignore_eos");

  if (const json::value* stop = field(*body, "stop")) {
    auto add_stop = [&](const json::value& item) {
      if (!item.is_string() || item.get_string().empty())
        reject("stop", "'stop' must be a non-empty string or a list of non-empty strings");
      request.params.stop.emplace_back(item.get_string());
    };
    if (stop->is_array())
      for (const json::value& item : stop->get_array()) add_stop(item);
    else
      add_stop(*stop);
  }

  request.stream = bool_field(*body, "stream");
  if (const json::value* options = field(*body, "stream_options")) {
    if (!request.stream)
      reject("stream_options", "'stream_options' is only allowed when 'stream' is true");
    if (!options->is_object()) reject("stream_options", "'stream_options' must be an object");
    request.include_usage = bool_field(options->get_object(), "include_usage");
  }

  if (endpoint == Endpoint::completions) {
    if (auto logprobs = integer_field(*body, "logprobs", 0, 20)) {
      request.want_logprobs = true;
      request.params.top_logprobs = int(*logprobs);
    }
    if (bool_field(*body, "echo")) reject("echo", "'echo' is not supported by retrace serve");
  } else {
    request.want_logprobs = bool_field(*body, "logprobs");
    auto top = integer_field(*body, "top_logprobs", 0, 20);
    if (top && !request.want_logprobs)
      reject("top_logprobs", "'top_logprobs' needs 'logprobs': true");
    if (request.want_logprobs) request.params.top_logprobs = int(top.value_or(0));
  }
  request.tokens_as_ids = bool_field(*body, "return_tokens_as_token_ids");
  request.return_token_ids = bool_field(*body, "return_token_ids");
  return request;
}

// ---------------------------------------------------------------------------------------------
// Metrics

struct Metrics {
  std::size_t requests_running = 0;
  std::size_t requests_waiting = 0;
  std::size_t sequences_running = 0;
  std::size_t largest_batch = 0;
  std::uint64_t generation_tokens = 0;
  std::uint64_t prompt_tokens = 0;
  std::uint64_t requests_served = 0;
  std::uint64_t requests_cancelled = 0;
  std::uint64_t steps = 0;

  std::string prometheus(const ServeOptions& options) const {
    std::string text;
    auto metric = [&](const char* name, const char* type, const char* help, std::uint64_t value) {
      text += "# HELP ";
      text += name;
      text += ' ';
      text += help;
      text += "\n# TYPE ";
      text += name;
      text += ' ';
      text += type;
      text += '\n';
      text += name;
      text += "{model_name=\"";
      text += options.model_name;
      text += "\"} ";
      put_number(text, value);
      text += '\n';
    };
    metric("retrace_sim_requests_running", "gauge", "Requests in the running batch.", requests_running);
    metric("retrace_sim_requests_waiting", "gauge", "Requests waiting to join the batch.", requests_waiting);
    metric("retrace_sim_batch_sequences", "gauge", "Sequences in the running batch.", sequences_running);
    metric("retrace_sim_batch_sequences_max", "gauge", "Largest batch (sequences) seen since start.", largest_batch);
    metric("retrace_sim_generation_tokens_total", "counter", "Tokens generated.", generation_tokens);
    metric("retrace_sim_prompt_tokens_total", "counter", "Prompt tokens processed.", prompt_tokens);
    metric("retrace_sim_requests_served_total", "counter", "Requests completed.", requests_served);
    metric("retrace_sim_requests_cancelled_total", "counter", "Requests dropped because the client went away or the server stopped.", requests_cancelled);
    metric("retrace_sim_steps_total", "counter", "Batch iterations run.", steps);
    return text;
  }
};

// ---------------------------------------------------------------------------------------------
// HTTP sessions

class Server;

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, Server& server);
  ~Session();

  void start() { do_read(); }

  // A complete response; the session reads the next request (or closes) once it is written.
  void respond(unsigned status, std::string_view content_type, std::string_view body);
  void respond_error(const ApiError& error) { respond(error.status, "application/json", error_body(error)); }

  // Streaming: begin(), then append SSE bytes to stream_buffer() and flush() as they come, then
  // end_stream(). Bytes are framed as one HTTP chunk per flush.
  void begin_stream();
  std::string& stream_buffer() { return sse_; }
  void flush();
  void end_stream();

  // The client is gone (a write failed) or the server closed the connection.
  bool gone() const { return closed_; }
  // On shutdown: close now if between requests; otherwise after the current response.
  void close_if_idle();
  void close();

 private:
  void do_read();
  void on_header(beast::error_code ec);
  void on_read(beast::error_code ec);
  void handle(http::request<http::string_body>& request);
  void start_write();
  void on_write(beast::error_code ec);
  void frame_pending_sse();

  tcp::socket socket_;
  Server& server_;
  beast::flat_buffer read_buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::string sse_;        // SSE bytes not yet framed
  std::string outbox_;     // framed bytes not yet handed to the socket
  std::string writing_;    // bytes in flight; must outlive the write
  bool reading_ = false;   // waiting for a request (idle)
  bool writing_active_ = false;
  bool response_done_ = false;  // the last byte of the current response is in outbox_/writing_
  bool keep_alive_ = true;
  bool head_ = false;  // the current request is HEAD: its response has a header and no body
  bool closed_ = false;
};

// ---------------------------------------------------------------------------------------------
// The scheduler: continuous batching over the model.

struct ChoiceState {
  ChoiceState(Generation generation, int index, std::size_t prompt_index)
      : generation(std::move(generation)), index(index), prompt_index(prompt_index) {}
  Generation generation;
  int index;
  std::size_t prompt_index;
  std::size_t streamed_tokens = 0;     // tokens already sent in events
  std::size_t text_offset = 0;         // completions logprobs' text_offset of the next token
  std::vector<GeneratedToken> logprobs;  // for tokens not yet sent (stream) or all (non-stream)
  bool first_event_sent = false;
  bool done = false;
};

struct ActiveRequest {
  ApiRequest api;
  std::shared_ptr<Session> session;
  std::string id;
  std::string chunk_prefix;  // `data: {"id":...,"choices":[` for streamed events
  std::int64_t created = 0;
  std::vector<ChoiceState> choices;
  std::size_t unfinished = 0;
  std::size_t prompt_tokens = 0;
};

class Scheduler {
 public:
  Scheduler(asio::io_context& io, const ServeOptions& options, const Model& model, Metrics& metrics)
      : io_(io), options_(options), model_(model), metrics_(metrics), timer_(io) {}

  void submit(std::unique_ptr<ActiveRequest> request) {
    waiting_.push_back(std::move(request));
    metrics_.requests_waiting = waiting_.size();
    if (!step_scheduled_) schedule_step();
  }

  // Drops every request (server stopping).
  void abort_all() {
    timer_.cancel();
    metrics_.requests_cancelled += waiting_.size() + running_.size();
    waiting_.clear();
    running_.clear();
  }

 private:
  std::size_t admit();  // returns the prompt tokens admitted
  void schedule_step();
  void run_steps();
  void step();
  void emit(ActiveRequest& request, ChoiceState& choice);
  void put_logprobs(std::string& out, const ActiveRequest& request, ChoiceState& choice);
  void complete(ActiveRequest& request);

  asio::io_context& io_;
  const ServeOptions& options_;
  const Model& model_;
  Metrics& metrics_;
  asio::steady_timer timer_;
  std::deque<std::unique_ptr<ActiveRequest>> waiting_;
  std::vector<std::unique_ptr<ActiveRequest>> running_;
  std::size_t running_sequences_ = 0;
  bool step_scheduled_ = false;
};

std::size_t Scheduler::admit() {
  std::size_t admitted_prompt_tokens = 0;
  while (!waiting_.empty()) {
    ActiveRequest& next = *waiting_.front();
    std::size_t sequences = next.choices.size();
    if (!running_.empty() && running_sequences_ + sequences > std::size_t(options_.max_batch)) break;
    if (next.session->gone()) {
      ++metrics_.requests_cancelled;
    } else {
      admitted_prompt_tokens += next.prompt_tokens;
      metrics_.prompt_tokens += next.prompt_tokens;
      running_sequences_ += sequences;
      running_.push_back(std::move(waiting_.front()));
    }
    waiting_.pop_front();
  }
  metrics_.requests_waiting = waiting_.size();
  metrics_.requests_running = running_.size();
  metrics_.sequences_running = running_sequences_;
  metrics_.largest_batch = std::max(metrics_.largest_batch, running_sequences_);
  return admitted_prompt_tokens;
}

void Scheduler::schedule_step() {
  std::size_t admitted_prompt_tokens = admit();
  if (running_.empty()) {
    step_scheduled_ = false;
    return;
  }
  step_scheduled_ = true;
  if (!options_.latency_model) {
    asio::post(io_, [this] { run_steps(); });
    return;
  }
  double cost_ms = options_.decode_step_ms + options_.decode_ms_per_sequence * double(running_sequences_) +
                   options_.prefill_ms_per_token * double(admitted_prompt_tokens);
  timer_.expires_after(std::chrono::microseconds(std::int64_t(cost_ms * 1000.0)));
  timer_.async_wait([this](beast::error_code ec) {
    if (!ec) run_steps();
  });
}

void Scheduler::run_steps() {
  // Flat out, several iterations run back to back before the sockets are written, so one write
  // carries several events (as a loaded server's would) instead of one syscall per token: at least
  // 250 us and 8 iterations, at most 2 ms.
  const auto burst_start = Clock::now();
  for (int iterations = 1;; ++iterations) {
    step();
    if (options_.latency_model || running_.empty()) break;
    auto elapsed = Clock::now() - burst_start;
    if (elapsed >= std::chrono::milliseconds(2) ||
        (iterations >= 8 && elapsed >= std::chrono::microseconds(250)))
      break;
    admit();
  }
  for (auto& request : running_)
    if (request->api.stream) request->session->flush();
  schedule_step();
}

void Scheduler::step() {
  const int split = options_.batch_variance ? Model::split_count_for_batch(int(running_sequences_))
                                            : Model::kFixedSplitCount;
  ++metrics_.steps;
  for (auto& request : running_) {
    if (request->session->gone()) continue;  // removed below
    const bool stream = request->api.stream;
    for (ChoiceState& choice : request->choices) {
      if (choice.done) continue;
      const GeneratedToken& token = choice.generation.step(split);
      ++metrics_.generation_tokens;
      if (request->api.want_logprobs) choice.logprobs.push_back(token);
      bool finished = choice.generation.finished();
      if (stream && (finished || choice.generation.tokens().size() - choice.streamed_tokens >=
                                     std::size_t(options_.stream_interval)))
        emit(*request, choice);
      if (finished) {
        choice.done = true;
        --request->unfinished;
      }
    }
  }
  // Retire finished and abandoned requests.
  std::size_t kept = 0;
  for (std::size_t i = 0; i < running_.size(); ++i) {
    ActiveRequest& request = *running_[i];
    bool abandoned = request.session->gone();
    if (abandoned || request.unfinished == 0) {
      running_sequences_ -= request.choices.size();
      if (abandoned) ++metrics_.requests_cancelled;
      else complete(request);
      running_[i].reset();
    } else {
      if (kept != i) running_[kept] = std::move(running_[i]);
      ++kept;
    }
  }
  running_.resize(kept);
  metrics_.requests_running = running_.size();
  metrics_.sequences_running = running_sequences_;
}

void Scheduler::put_logprobs(std::string& out, const ActiveRequest& request, ChoiceState& choice) {
  const Tokenizer& tokenizer = model_.tokenizer();
  const bool as_ids = request.api.tokens_as_ids;
  if (!request.api.want_logprobs) {
    out += "null";
    return;
  }
  if (request.api.endpoint == Endpoint::chat) {
    out += "{\"content\":[";
    for (std::size_t i = 0; i < choice.logprobs.size(); ++i) {
      const GeneratedToken& token = choice.logprobs[i];
      if (i) out += ',';
      out += "{\"token\":";
      put_token_label(out, tokenizer, token.token, as_ids);
      out += ",\"logprob\":";
      put_logprob(out, token.logprob);
      out += ",\"bytes\":";
      put_token_bytes(out, tokenizer, token.token);
      out += ",\"top_logprobs\":[";
      for (std::size_t k = 0; k < token.top.size(); ++k) {
        if (k) out += ',';
        out += "{\"token\":";
        put_token_label(out, tokenizer, token.top[k].token, as_ids);
        out += ",\"logprob\":";
        put_logprob(out, token.top[k].logprob);
        out += ",\"bytes\":";
        put_token_bytes(out, tokenizer, token.top[k].token);
        out += '}';
      }
      out += "]}";
    }
    out += "]}";
  } else {
    // OpenAI's legacy shape: parallel lists; each top_logprobs entry maps token text to logprob
    // and, as vLLM does, always includes the sampled token.
    out += "{\"tokens\":[";
    for (std::size_t i = 0; i < choice.logprobs.size(); ++i) {
      if (i) out += ',';
      put_token_label(out, tokenizer, choice.logprobs[i].token, as_ids);
    }
    out += "],\"token_logprobs\":[";
    for (std::size_t i = 0; i < choice.logprobs.size(); ++i) {
      if (i) out += ',';
      put_logprob(out, choice.logprobs[i].logprob);
    }
    out += "],\"top_logprobs\":[";
    for (std::size_t i = 0; i < choice.logprobs.size(); ++i) {
      const GeneratedToken& token = choice.logprobs[i];
      if (i) out += ',';
      out += '{';
      bool sampled_listed = false;
      for (std::size_t k = 0; k < token.top.size(); ++k) {
        if (k) out += ',';
        put_token_label(out, tokenizer, token.top[k].token, as_ids);
        out += ':';
        put_logprob(out, token.top[k].logprob);
        sampled_listed |= token.top[k].token == token.token;
      }
      if (!sampled_listed) {
        if (!token.top.empty()) out += ',';
        put_token_label(out, tokenizer, token.token, as_ids);
        out += ':';
        put_logprob(out, token.logprob);
      }
      out += '}';
    }
    out += "],\"text_offset\":[";
    for (std::size_t i = 0; i < choice.logprobs.size(); ++i) {
      if (i) out += ',';
      put_number(out, choice.text_offset);
      choice.text_offset += tokenizer.token_bytes(choice.logprobs[i].token).size();
    }
    out += "]}";
  }
  choice.logprobs.clear();
}

void put_finish(std::string& out, const Generation& generation, bool finished) {
  out += ",\"finish_reason\":";
  if (!finished) out += "null";
  else out += generation.finish_reason() == FinishReason::length ? "\"length\"" : "\"stop\"";
  out += ",\"stop_reason\":";
  if (finished && !generation.matched_stop().empty()) put_string(out, generation.matched_stop());
  else out += "null";
}

void put_usage(std::string& out, std::size_t prompt_tokens, std::size_t completion_tokens) {
  out += "\"usage\":{\"prompt_tokens\":";
  put_number(out, prompt_tokens);
  out += ",\"total_tokens\":";
  put_number(out, prompt_tokens + completion_tokens);
  out += ",\"completion_tokens\":";
  put_number(out, completion_tokens);
  out += '}';
}

// One SSE event for `choice` with the tokens produced since its last event (vLLM's shape: one
// choice per event; finish_reason rides on the event with the last tokens).
void Scheduler::emit(ActiveRequest& request, ChoiceState& choice) {
  std::string& out = request.session->stream_buffer();
  const Generation& generation = choice.generation;
  const bool finished = generation.finished();
  const bool chat = request.api.endpoint == Endpoint::chat;
  const auto& prompt = request.api.prompts[choice.prompt_index];
  if (chat && !choice.first_event_sent) {
    out += request.chunk_prefix;
    out += "{\"index\":";
    put_number(out, choice.index);
    out += ",\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]";
    if (request.api.return_token_ids) {
      out += ",\"prompt_token_ids\":";
      put_token_ids(out, prompt);
    }
    out += "}\n\n";
  }
  out += request.chunk_prefix;
  out += "{\"index\":";
  put_number(out, choice.index);
  std::string_view text = choice.generation.take_releasable_text();
  if (chat) {
    out += ",\"delta\":{\"content\":";
    put_string(out, text);
    out += '}';
  } else {
    out += ",\"text\":";
    put_string(out, text);
  }
  out += ",\"logprobs\":";
  put_logprobs(out, request, choice);
  put_finish(out, generation, finished);
  if (request.api.return_token_ids) {
    if (!chat && !choice.first_event_sent) {
      out += ",\"prompt_token_ids\":";
      put_token_ids(out, prompt);
    }
    out += ",\"token_ids\":";
    put_token_ids(out, std::span(generation.tokens()).subspan(choice.streamed_tokens));
  }
  out += "}]}\n\n";
  choice.first_event_sent = true;
  choice.streamed_tokens = generation.tokens().size();
}

void Scheduler::complete(ActiveRequest& request) {
  ++metrics_.requests_served;
  std::size_t completion_tokens = 0;
  for (const ChoiceState& choice : request.choices) completion_tokens += choice.generation.tokens().size();
  const bool chat = request.api.endpoint == Endpoint::chat;
  if (request.api.stream) {
    std::string& out = request.session->stream_buffer();
    if (request.api.include_usage) {
      out += request.chunk_prefix;
      out += "],";
      put_usage(out, request.prompt_tokens, completion_tokens);
      out += "}\n\n";
    }
    out += "data: [DONE]\n\n";
    request.session->end_stream();
    return;
  }
  std::string body = "{\"id\":";
  put_string(body, request.id);
  body += chat ? ",\"object\":\"chat.completion\"" : ",\"object\":\"text_completion\"";
  body += ",\"created\":";
  put_number(body, request.created);
  body += ",\"model\":";
  put_string(body, options_.model_name);
  body += ",\"system_fingerprint\":\"fp_retrace_sim_";
  put_number(body, model_.weights_seed());
  body += "\",\"choices\":[";
  for (std::size_t i = 0; i < request.choices.size(); ++i) {
    ChoiceState& choice = request.choices[i];
    if (i) body += ',';
    body += "{\"index\":";
    put_number(body, choice.index);
    if (chat) {
      body += ",\"message\":{\"role\":\"assistant\",\"content\":";
      put_string(body, choice.generation.text());
      body += '}';
    } else {
      body += ",\"text\":";
      put_string(body, choice.generation.text());
    }
    body += ",\"logprobs\":";
    put_logprobs(body, request, choice);
    put_finish(body, choice.generation, true);
    if (request.api.return_token_ids) {
      if (!chat) {
        body += ",\"prompt_token_ids\":";
        put_token_ids(body, request.api.prompts[choice.prompt_index]);
      }
      body += ",\"token_ids\":";
      put_token_ids(body, choice.generation.tokens());
    }
    body += '}';
  }
  body += "],";
  put_usage(body, request.prompt_tokens, completion_tokens);
  if (chat && request.api.return_token_ids) {
    body += ",\"prompt_token_ids\":";
    put_token_ids(body, request.api.prompts[0]);
  }
  body += '}';
  request.session->respond(200, "application/json", body);
}

// ---------------------------------------------------------------------------------------------
// The server: acceptor, routing, shutdown.

class Server {
 public:
  Server(asio::io_context& io, const ServeOptions& options, std::ostream& log)
      : io_(io),
        options_(options),
        log_(log),
        model_(options.weights_seed),
        scheduler_(io, options_, model_, metrics_),
        acceptor_(io),
        signals_(io, SIGINT, SIGTERM),
        drain_timer_(io) {
    if (!options.answers_path.empty()) answers_ = AnswerBook::load(options.answers_path);
  }

  void listen(std::ostream& announce) {
    net::ListenAddress address = net::parse_listen(options_.listen);
    boost::system::error_code ec;
    auto ip = asio::ip::make_address(address.host, ec);
    if (ec) throw std::runtime_error("--listen " + options_.listen + ": '" + address.host + "' is not an IP address; try 127.0.0.1:8000");
    tcp::endpoint endpoint(ip, address.port);
    acceptor_.open(endpoint.protocol());
    acceptor_.set_option(asio::socket_base::reuse_address(true));
    acceptor_.bind(endpoint, ec);
    if (ec) throw std::runtime_error("cannot listen on " + options_.listen + ": " + ec.message() + " (try another port, or port 0 for any free one)");
    acceptor_.listen(asio::socket_base::max_listen_connections);
    auto bound = acceptor_.local_endpoint();
    std::string host = bound.address().is_v6() ? "[" + bound.address().to_string() + "]" : bound.address().to_string();
    log_ << "retrace serve: simulator model '" << options_.model_name
         << "' (a deterministic toy, not a real LLM); batch variance " << (options_.batch_variance ? "on" : "off")
         << ", latency model " << (options_.latency_model ? "on" : "off") << ", max batch " << options_.max_batch;
    if (answers_.size()) log_ << ", " << answers_.size() << " known answers";
    log_ << std::endl;
    announce << "listening on http://" << host << ":" << bound.port() << std::endl;
    do_accept();
    signals_.async_wait([this](beast::error_code ec, int) {
      if (!ec) begin_shutdown();
    });
  }

  // After io.run() returns: close everything so that pending handlers finish and release sessions.
  void close_everything() {
    closing_ = true;
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    signals_.cancel(ignored);
    drain_timer_.cancel();
    scheduler_.abort_all();
    for (auto& [session, weak] : sessions_)
      if (auto alive = weak.lock()) alive->close();
  }

  void add_session(Session* session, std::weak_ptr<Session> weak) { sessions_.emplace(session, std::move(weak)); }
  void remove_session(Session* session) {
    sessions_.erase(session);
    if (draining_ && !closing_ && sessions_.empty()) io_.stop();
  }
  bool draining() const { return draining_; }
  std::size_t max_body() const { return options_.max_body; }

  void handle(Session& session, std::shared_ptr<Session> self, http::request<http::string_body>& request);

 private:
  void do_accept() {
    acceptor_.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (ec) {
        if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
        log_ << "retrace serve: accept failed: " << ec.message() << std::endl;
      } else {
        socket.set_option(tcp::no_delay(true), ec);
        auto session = std::make_shared<Session>(std::move(socket), *this);
        add_session(session.get(), session);
        session->start();
      }
      do_accept();
    });
  }

  void begin_shutdown() {
    if (draining_) return;
    draining_ = true;
    log_ << "retrace serve: stopping; finishing in-flight requests (up to "
         << options_.drain_timeout.count() << " ms)" << std::endl;
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    for (auto& [session, weak] : sessions_)
      if (auto alive = weak.lock()) alive->close_if_idle();
    if (sessions_.empty()) {
      io_.stop();
      return;
    }
    drain_timer_.expires_after(options_.drain_timeout);
    drain_timer_.async_wait([this](beast::error_code ec) {
      if (ec) return;
      log_ << "retrace serve: drain timeout; closing " << sessions_.size() << " connections" << std::endl;
      io_.stop();
    });
  }

  std::string models_body() const;

  asio::io_context& io_;
  const ServeOptions& options_;
  std::ostream& log_;
  Model model_;
  AnswerBook answers_;
  Metrics metrics_;
  Scheduler scheduler_;
  tcp::acceptor acceptor_;
  asio::signal_set signals_;
  asio::steady_timer drain_timer_;
  std::unordered_map<Session*, std::weak_ptr<Session>> sessions_;
  bool draining_ = false;
  bool closing_ = false;
  std::uint64_t request_counter_ = 0;
  const std::int64_t started_ = std::int64_t(std::time(nullptr));
};

std::string Server::models_body() const {
  std::string body = "{\"object\":\"list\",\"data\":[{\"id\":";
  put_string(body, options_.model_name);
  body += ",\"object\":\"model\",\"created\":";
  put_number(body, started_);
  body += ",\"owned_by\":\"retrace-simulator\",\"root\":";
  put_string(body, options_.model_name);
  body += ",\"parent\":null,\"max_model_len\":";
  put_number(body, options_.max_model_len);
  body += ",\"description\":\"retrace built-in simulator (retrace serve): a deterministic toy model for "
          "testing, not a real LLM. Batch variance ";
  body += options_.batch_variance ? "on" : "off";
  body += ", weights seed ";
  put_number(body, options_.weights_seed);
  body += ".\"}]}";
  return body;
}

void Server::handle(Session& session, std::shared_ptr<Session> self, http::request<http::string_body>& request) {
  std::string_view target = request.target();
  std::string_view path = target.substr(0, target.find('?'));
  const bool get = request.method() == http::verb::get;
  const bool post = request.method() == http::verb::post;
  auto wrong_method = [&](std::string_view allowed) {
    session.respond_error({405,
                           "Method " + std::string(request.method_string()) + " is not allowed on " +
                               std::string(path) + "; use " + std::string(allowed) + ".",
                           {}, "method_not_allowed"});
  };

  Endpoint endpoint;
  if (path == "/v1/completions") {
    endpoint = Endpoint::completions;
  } else if (path == "/v1/chat/completions") {
    endpoint = Endpoint::chat;
  } else if (path == "/v1/models") {
    return get ? session.respond(200, "application/json", models_body()) : wrong_method("GET");
  } else if (path == "/health") {
    return get ? session.respond(200, "application/json", "{}") : wrong_method("GET");
  } else if (path == "/version") {
    return get ? session.respond(200, "application/json",
                                 std::string("{\"version\":\"retrace-sim ") + kToolVersion + "\"}")
               : wrong_method("GET");
  } else if (path == "/metrics") {
    return get ? session.respond(200, "text/plain; version=0.0.4", metrics_.prometheus(options_))
               : wrong_method("GET");
  } else {
    return session.respond_error({404,
                                  "Unknown request URL: " + std::string(request.method_string()) + " " +
                                      std::string(path) +
                                      ". retrace serve answers POST /v1/completions, POST /v1/chat/completions, "
                                      "GET /v1/models, /health, /version and /metrics.",
                                  {}, "unknown_url"});
  }
  if (!post) return wrong_method("POST");

  ++request_counter_;
  ParseContext context{model_, answers_, options_,
                       std::uint64_t(Clock::now().time_since_epoch().count()) ^ (request_counter_ << 32)};
  ApiRequest api;
  try {
    api = parse_request(endpoint, request.body(), context);
  } catch (const ApiError& error) {
    return session.respond_error(error);
  }

  auto active = std::make_unique<ActiveRequest>();
  active->session = std::move(self);
  active->created = std::int64_t(std::time(nullptr));
  {
    static constexpr char kHex[] = "0123456789abcdef";
    std::uint64_t a = std::uint64_t(started_) * 0x9e3779b97f4a7c15ull ^ request_counter_;
    active->id = endpoint == Endpoint::chat ? "chatcmpl-" : "cmpl-";
    for (int half = 0; half < 2; ++half) {
      a = (a ^ (a >> 31)) * 0xbf58476d1ce4e5b9ull + 0x632be59bd9b4e019ull;
      for (int i = 0; i < 16; ++i) active->id += kHex[(a >> (4 * i)) & 15];
    }
  }
  std::string& prefix = active->chunk_prefix;
  prefix = "data: {\"id\":";
  put_string(prefix, active->id);
  prefix += endpoint == Endpoint::chat ? ",\"object\":\"chat.completion.chunk\"" : ",\"object\":\"text_completion\"";
  prefix += ",\"created\":";
  put_number(prefix, active->created);
  prefix += ",\"model\":";
  put_string(prefix, options_.model_name);
  prefix += ",\"system_fingerprint\":\"fp_retrace_sim_";
  put_number(prefix, model_.weights_seed());
  prefix += "\",\"choices\":[";

  for (std::size_t p = 0; p < api.prompts.size(); ++p) {
    active->prompt_tokens += api.prompts[p].size();
    for (int i = 0; i < api.n; ++i) {
      SamplingParams params = api.params;
      params.seed = api.params.seed + std::uint64_t(i) * 0x9e3779b97f4a7c15ull;
      int index = int(p) * api.n + i;
      active->choices.emplace_back(Generation(model_, api.prompts[p], std::move(params), api.answers[p]), index, p);
    }
  }
  active->unfinished = active->choices.size();
  active->api = std::move(api);
  if (active->api.stream) session.begin_stream();
  scheduler_.submit(std::move(active));
}

// ---------------------------------------------------------------------------------------------
// Session implementation

Session::Session(tcp::socket socket, Server& server) : socket_(std::move(socket)), server_(server) {}

Session::~Session() { server_.remove_session(this); }

void Session::close() {
  if (closed_) return;
  closed_ = true;
  boost::system::error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
}

void Session::close_if_idle() {
  if (reading_) close();
}

void Session::do_read() {
  if (closed_) return;
  if (server_.draining()) return close();
  parser_.emplace();
  parser_->body_limit(server_.max_body());
  head_ = false;
  reading_ = true;
  http::async_read_header(socket_, read_buffer_, *parser_,
                          [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_header(ec); });
}

void Session::on_header(beast::error_code ec) {
  if (ec == http::error::body_limit) return on_read(ec);  // Content-Length over the limit
  if (ec) {
    reading_ = false;
    if (ec == http::error::end_of_stream || ec == asio::error::operation_aborted || ec == asio::error::eof ||
        ec == asio::error::connection_reset || closed_)
      return close();
    keep_alive_ = false;
    return respond_error({400, "malformed HTTP request: " + ec.message(), {}, {}});
  }
  reading_ = false;  // a request has begun: no longer idle
  auto length = parser_->content_length();
  if (length && *length > server_.max_body()) {
    keep_alive_ = false;
    return respond_error({413,
                          "request body of " + std::to_string(*length) + " bytes is over the limit of " +
                              std::to_string(server_.max_body()) + " bytes (--max-body)",
                          {}, "request_too_large"});
  }
  auto& request = parser_->get();
  if (beast::iequals(request[http::field::expect], "100-continue")) {
    // curl and others wait (a second, for curl) for this before sending a body.
    static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    asio::async_write(socket_, asio::buffer(kContinue.data(), kContinue.size()),
                      [self = shared_from_this()](beast::error_code ec, std::size_t) {
                        if (ec) return self->close();
                        http::async_read(self->socket_, self->read_buffer_, *self->parser_,
                                         [self](beast::error_code ec, std::size_t) { self->on_read(ec); });
                      });
    return;
  }
  http::async_read(socket_, read_buffer_, *parser_,
                   [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
}

void Session::on_read(beast::error_code ec) {
  if (ec == http::error::body_limit) {
    keep_alive_ = false;
    return respond_error({413,
                          "request body is over the limit of " + std::to_string(server_.max_body()) +
                              " bytes (--max-body)",
                          {}, "request_too_large"});
  }
  if (ec) {
    if (ec == asio::error::operation_aborted || closed_) return close();
    keep_alive_ = false;
    return respond_error({400, "malformed HTTP request: " + ec.message(), {}, {}});
  }
  http::request<http::string_body> request = parser_->release();
  keep_alive_ = request.keep_alive();
  head_ = request.method() == http::verb::head;
  response_done_ = false;
  server_.handle(*this, shared_from_this(), request);
}

void Session::respond(unsigned status, std::string_view content_type, std::string_view body) {
  outbox_ += "HTTP/1.1 ";
  put_number(outbox_, status);
  outbox_ += ' ';
  outbox_ += http::obsolete_reason(http::int_to_status(status));
  outbox_ += "\r\ncontent-type: ";
  outbox_ += content_type;
  outbox_ += "\r\ncontent-length: ";
  put_number(outbox_, body.size());
  outbox_ += "\r\nserver: retrace-sim\r\n";
  if (!keep_alive_ || server_.draining()) outbox_ += "connection: close\r\n";
  outbox_ += "\r\n";
  // A response to HEAD carries the length a GET would get, and no body (RFC 9110 9.3.2): bytes
  // after the header would be read as the next response by a client that reuses the connection.
  if (!head_) outbox_ += body;
  response_done_ = true;
  start_write();
}

void Session::begin_stream() {
  outbox_ +=
      "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
      "transfer-encoding: chunked\r\ncache-control: no-cache\r\nserver: retrace-sim\r\n";
  if (!keep_alive_) outbox_ += "connection: close\r\n";
  outbox_ += "\r\n";
  start_write();
}

void Session::frame_pending_sse() {
  if (sse_.empty()) return;
  char digits[16];
  auto result = std::to_chars(digits, digits + sizeof digits, sse_.size(), 16);
  outbox_.append(digits, result.ptr);
  outbox_ += "\r\n";
  outbox_ += sse_;
  outbox_ += "\r\n";
  sse_.clear();
}

void Session::flush() {
  frame_pending_sse();
  start_write();
}

void Session::end_stream() {
  frame_pending_sse();
  outbox_ += "0\r\n\r\n";
  response_done_ = true;
  start_write();
}

void Session::start_write() {
  if (writing_active_ || closed_) return;
  if (outbox_.empty()) {
    if (response_done_) {
      response_done_ = false;
      if (keep_alive_) do_read();
      else close();
    }
    return;
  }
  std::swap(writing_, outbox_);
  outbox_.clear();
  writing_active_ = true;
  asio::async_write(socket_, asio::buffer(writing_),
                    [self = shared_from_this()](beast::error_code ec, std::size_t) {
                      self->writing_active_ = false;
                      self->writing_.clear();
                      if (ec) return self->close();
                      self->start_write();  // what arrived meanwhile, or the next request
                    });
}

}  // namespace

int serve(const ServeOptions& options, std::ostream& announce, std::ostream& log) {
  if (options.max_batch < 1) throw std::runtime_error("--max-batch must be at least 1");
  if (options.stream_interval < 1) throw std::runtime_error("--stream-interval must be at least 1");
  asio::io_context io(1);
  Server server(io, options, log);
  server.listen(announce);
  io.run();
  // Stopped (signal, drain done or timed out): close what is left and let its handlers unwind.
  server.close_everything();
  io.restart();
  io.run();
  log << "retrace serve: stopped" << std::endl;
  return 0;
}

}  // namespace retrace::sim
