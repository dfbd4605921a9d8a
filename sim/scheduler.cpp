#include "sim/scheduler.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>

#include <boost/asio/post.hpp>

#include "sim/json_out.hpp"
#include "sim/tool_calls.hpp"

namespace retrace::sim {

namespace asio = boost::asio;

ActiveRequest::ActiveRequest(ApiRequest api_request, std::shared_ptr<Session> session_, std::string id_,
                             const Model& model, const ServeOptions& options)
    : api(std::move(api_request)), session(std::move(session_)), id(std::move(id_)),
      created(std::int64_t(std::time(nullptr))) {
  const bool chat = api.endpoint != Endpoint::completions;  // reasons first with --reasoning
  if (!shape_writer(api.endpoint)) {
    chunk_prefix = "data: ";
    put_response_head(chunk_prefix, id, chat ? "chat.completion.chunk" : "text_completion", created,
                      options.model_name, model.weights_seed());
  }
  for (std::size_t p = 0; p < api.prompts.size(); ++p) {
    prompt_tokens += api.prompts[p].size();
    for (int i = 0; i < api.n; ++i) {
      SamplingParams params = api.params;
      params.seed = api.params.seed + std::uint64_t(i) * 0x9e3779b97f4a7c15ull;
      int index = int(p) * api.n + i;
      choices.emplace_back(Generation(model, api.prompts[p], std::move(params), api.answers[p]), index, p,
                           chat ? std::size_t(options.reasoning_tokens) : 0);
    }
  }
  unfinished = choices.size();
}

void Scheduler::submit(std::unique_ptr<ActiveRequest> request) {
  if (request->api.stream && options_.fail_mid_stream > 0) {
    const auto k = double(streamed_requests_++);
    request->fails_mid_stream =
        std::floor((k + 1) * options_.fail_mid_stream) > std::floor(k * options_.fail_mid_stream);
  }
  if (options_.per_request_metrics) request->arrived = options_.clock->now();
  waiting_.push_back(std::move(request));
  metrics_.requests_waiting = waiting_.size();
  if (!step_scheduled_) schedule_step();
}

void Scheduler::abort_all() {
  timer_.cancel();
  metrics_.requests_cancelled += waiting_.size() + running_.size();
  waiting_.clear();
  running_.clear();
}

std::size_t Scheduler::admit() {
  std::size_t admitted_prompt_tokens = 0;
  while (!waiting_.empty()) {
    ActiveRequest& next = *waiting_.front();
    std::size_t sequences = next.choices.size();
    if (!running_.empty() && running_sequences_ + sequences > std::size_t(options_.max_batch)) break;
    if (next.session->gone()) {
      ++metrics_.requests_cancelled;
    } else {
      look_up_cache(next);
      admitted_prompt_tokens += next.prompt_tokens - next.cached_tokens;
      metrics_.prompt_tokens += next.prompt_tokens;
      running_sequences_ += sequences;
      if (options_.per_request_metrics) next.scheduled = options_.clock->now();
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

void Scheduler::look_up_cache(ActiveRequest& request) {
  if (!options_.prefix_cache || !request.api.cache_prompt) return;
  for (const auto& prompt : request.api.prompts)
    request.cached_tokens += prefix_cache_.lookup_and_insert(request.api.cache_salt, prompt);
}

std::optional<std::size_t> Scheduler::reported_cached(const ActiveRequest& request) const {
  if (!options_.prefix_cache) return std::nullopt;
  return request.cached_tokens;
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
  timer_.async_wait([this](boost::system::error_code ec) {
    if (!ec) run_steps();
  });
}

void Scheduler::run_steps() {
  // Flat out, several iterations run back to back before the sockets are written, so one write
  // carries several events (as a loaded server's would) instead of one syscall per token: at least
  // 250 us and 8 iterations, at most 2 ms.
  const auto burst_start = options_.clock->now();
  for (int iterations = 1;; ++iterations) {
    step();
    if (options_.latency_model || running_.empty()) break;
    auto elapsed = options_.clock->now() - burst_start;
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
  const Clock::time_point now = options_.per_request_metrics ? options_.clock->now() : Clock::time_point{};
  for (auto& request : running_) {
    if (request->session->gone() || request->failed) continue;  // retired below
    if (request->first_token == Clock::time_point{}) request->first_token = now;
    // --cache-variance: a request that reused cached blocks is computed along another path, as a
    // real server's prefill over a cached prefix runs other kernels: its reductions add their
    // partial sums in the reverse order, whatever the batch's split.
    const bool reversed = options_.cache_variance && request->cached_tokens > 0;
    const bool stream = request->api.stream;
    for (ChoiceState& choice : request->choices) {
      if (choice.done) continue;
      const GeneratedToken& token = choice.generation.step(split, reversed);
      ++metrics_.generation_tokens;
      if (request->api.want_logprobs) choice.logprobs.push_back(token);
      bool finished = choice.generation.finished();
      if (request->fails_mid_stream && choice.index == 0 &&
          (finished || choice.generation.tokens().size() > std::size_t(options_.fail_after_tokens))) {
        fail(*request);
        break;
      }
      if (stream && (finished || choice.generation.tokens().size() - choice.streamed_tokens >=
                                     std::size_t(options_.stream_interval)))
        emit(*request, choice);
      if (finished) {
        choice.done = true;
        --request->unfinished;
      }
    }
  }
  retire();
}

// Completes finished requests and drops abandoned ones.
void Scheduler::retire() {
  std::size_t kept = 0;
  for (std::size_t i = 0; i < running_.size(); ++i) {
    ActiveRequest& request = *running_[i];
    bool abandoned = request.session->gone();
    if (abandoned || request.failed || request.unfinished == 0) {
      running_sequences_ -= request.choices.size();
      if (abandoned) ++metrics_.requests_cancelled;
      else if (!request.failed) complete(request);
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

namespace {
// A tool call's id: the response's and the choice's, as vLLM makes one per call.
std::string call_id(const ActiveRequest& request, const ChoiceState& choice) {
  return "call-" + request.id + "-" + std::to_string(choice.index);
}
}  // namespace

// The logprobs of the choice's tokens not yet written.
void Scheduler::put_choice_logprobs(std::string& out, const ActiveRequest& request, ChoiceState& choice) {
  const LogprobsShape shape{request.api.want_logprobs, request.api.endpoint == Endpoint::chat,
                            request.api.tokens_as_ids};
  put_logprobs(out, model_.tokenizer(), shape, choice.logprobs, choice.text_offset);
  choice.logprobs.clear();
}

// One SSE event for `choice` with the tokens produced since its last event (vLLM's shape: one
// choice per event; finish_reason rides on the event with the last tokens).
void Scheduler::emit(ActiveRequest& request, ChoiceState& choice) {
  if (const ShapeWriter* writer = shape_writer(request.api.endpoint)) return emit_shape(*writer, request, choice);
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
  const bool tool = chat && !request.api.tool_name.empty();
  if (chat) {
    const ReasoningSplit split = choice.reasoning.enabled()
                                     ? choice.reasoning.split(generation, model_.tokenizer(), text, choice.released_bytes)
                                     : ReasoningSplit{{}, text};
    out += ",\"delta\":{";
    if (!split.reasoning.empty()) {
      out += "\"reasoning_content\":";
      put_string(out, split.reasoning);
    }
    const bool comma = !split.reasoning.empty();
    if (tool && (!split.content.empty() || finished)) {
      if (comma) out += ',';
      put_tool_call_delta(out, call_id(request, choice), request.api.tool_name, split.content, !choice.call_started,
                          finished);
      choice.call_started = true;
    } else if (!split.content.empty() || !comma) {
      if (comma) out += ',';
      out += "\"content\":";
      put_string(out, split.content);
    }
    out += '}';
  } else {
    out += ",\"text\":";
    put_string(out, text);
  }
  out += ",\"logprobs\":";
  if (tool) {
    out += "null";  // a tool parser's call maps to no tokens
    choice.logprobs.clear();
  } else {
    put_choice_logprobs(out, request, choice);
  }
  put_finish(out, generation, finished, tool);
  if (request.api.return_token_ids) {
    if (!chat && !choice.first_event_sent) {
      out += ",\"prompt_token_ids\":";
      put_token_ids(out, prompt);
    }
    out += ",\"token_ids\":";
    put_token_ids(out, std::span(generation.tokens()).subspan(choice.streamed_tokens));
  }
  out += "}]}\n\n";
  choice.released_bytes += text.size();
  choice.first_event_sent = true;
  choice.streamed_tokens = generation.tokens().size();
}

// A failure after the 200 header, in vLLM's words: its error event (vllm/entrypoints/openai/
// serving_engine.py create_streaming_error_response, json.dumps of ErrorResponse(error=ErrorInfo))
// and the [DONE] its stream generators send after it.
void Scheduler::fail(ActiveRequest& request) {
  std::string& out = request.session->stream_buffer();
  request.failed = true;
  if (const ShapeWriter* writer = shape_writer(request.api.endpoint)) {
    writer->error(out, request.choices.front().shape,
                  "simulated engine failure after " + std::to_string(options_.fail_after_tokens) +
                      " tokens (retrace serve --fail-mid-stream)");
    return request.session->end_stream();
  }
  out += "data: {\"error\": {\"message\": \"simulated engine failure after ";
  put_number(out, options_.fail_after_tokens);
  out += " tokens (retrace serve --fail-mid-stream)\", \"type\": \"InternalServerError\", \"param\": null, "
         "\"code\": 500}}\n\n";
  out += "data: [DONE]\n\n";
  request.session->end_stream();
}

// `,"metrics":{...}` with --per-request-metrics (sim/json_out.hpp), else nothing.
void Scheduler::put_timings(std::string& out, const ActiveRequest& request, std::size_t completion_tokens) const {
  if (!options_.per_request_metrics) return;
  auto ms = [](std::chrono::nanoseconds d) { return std::chrono::duration<double, std::milli>(d).count(); };
  const auto end = options_.clock->now();
  out += ',';
  put_request_metrics(out, {ms(request.scheduled - request.arrived), ms(request.first_token - request.scheduled),
                            ms(end - request.first_token), completion_tokens});
}

// The end of a request: the usage chunk and [DONE] of a stream, or the whole response.
void Scheduler::complete(ActiveRequest& request) {
  ++metrics_.requests_served;
  if (const ShapeWriter* writer = shape_writer(request.api.endpoint)) return complete_shape(*writer, request);
  std::size_t completion_tokens = 0, reasoning_tokens = 0;
  for (const ChoiceState& choice : request.choices) {
    completion_tokens += choice.generation.tokens().size();
    reasoning_tokens += choice.reasoning.reasoning_tokens(choice.generation.tokens().size());
  }
  const bool chat = request.api.endpoint == Endpoint::chat;
  const std::optional<std::size_t> reasoning_usage =
      chat && options_.reasoning_tokens > 0 ? std::optional(reasoning_tokens) : std::nullopt;
  if (request.api.stream) {
    std::string& out = request.session->stream_buffer();
    if (request.api.include_usage) {
      out += request.chunk_prefix;
      out += "],";
      put_usage(out, request.prompt_tokens, completion_tokens, reported_cached(request), reasoning_usage);
      put_timings(out, request, completion_tokens);
      out += "}\n\n";
    } else if (options_.per_request_metrics) {  // vLLM's metrics come with usage; without it, alone
      out += request.chunk_prefix;
      out += "]";
      put_timings(out, request, completion_tokens);
      out += "}\n\n";
    }
    out += "data: [DONE]\n\n";
    request.session->end_stream();
    return;
  }
  std::string body;
  put_response_head(body, request.id, chat ? "chat.completion" : "text_completion", request.created,
                    options_.model_name, model_.weights_seed());
  for (std::size_t i = 0; i < request.choices.size(); ++i) {
    ChoiceState& choice = request.choices[i];
    if (i) body += ',';
    body += "{\"index\":";
    put_number(body, choice.index);
    const bool tool = chat && !request.api.tool_name.empty();
    if (chat) {
      body += ",\"message\":";
      const std::string_view text = choice.generation.text();
      const bool with_reasoning = choice.reasoning.enabled();
      const ReasoningSplit split = with_reasoning ? choice.reasoning.split(choice.generation, model_.tokenizer(), text, 0)
                                                  : ReasoningSplit{{}, text};
      if (tool) {
        put_tool_call_message(body, call_id(request, choice), request.api.tool_name, split.content, split.reasoning,
                              with_reasoning);
      } else {
        put_chat_message(body, text, split, with_reasoning);
      }
    } else {
      body += ",\"text\":";
      put_string(body, choice.generation.text());
    }
    body += ",\"logprobs\":";
    if (tool) {
      body += "null";
    } else {
      put_choice_logprobs(body, request, choice);
    }
    put_finish(body, choice.generation, true, tool);
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
  put_usage(body, request.prompt_tokens, completion_tokens, reported_cached(request), reasoning_usage);
  put_timings(body, request, completion_tokens);
  if (chat && request.api.return_token_ids) {
    body += ",\"prompt_token_ids\":";
    put_token_ids(body, request.api.prompts[0]);
  }
  body += '}';
  request.session->respond(200, "application/json", body);
}

// The Responses and Messages APIs (sim/shape_out.hpp): one choice, written by the API's writer.
ShapeAnswer Scheduler::shape_answer(const ActiveRequest& request, ChoiceState& choice) const {
  const Generation& generation = choice.generation;
  ShapeAnswer answer;
  answer.id = request.id;
  answer.created = request.created;
  answer.model = options_.model_name;
  answer.tool_name = request.api.tool_name;
  if (!answer.tool_name.empty()) answer.call_id = call_id(request, choice);
  answer.with_reasoning = choice.reasoning.enabled();
  const ReasoningSplit whole = answer.with_reasoning
                                   ? choice.reasoning.split(generation, model_.tokenizer(), generation.text(), 0)
                                   : ReasoningSplit{{}, generation.text()};
  answer.reasoning = whole.reasoning;
  answer.text = whole.content;
  answer.finish = generation.finish_reason();
  answer.matched_stop = generation.matched_stop();
  answer.input_tokens = request.prompt_tokens;
  answer.output_tokens = generation.tokens().size();
  answer.reasoning_tokens = choice.reasoning.reasoning_tokens(answer.output_tokens);
  answer.cached_tokens = reported_cached(request);
  return answer;
}

void Scheduler::emit_shape(const ShapeWriter& writer, ActiveRequest& request, ChoiceState& choice) {
  std::string& out = request.session->stream_buffer();
  const ShapeAnswer answer = shape_answer(request, choice);
  if (!choice.first_event_sent) writer.start(out, choice.shape, answer);
  const std::string_view text = choice.generation.take_releasable_text();
  const ReasoningSplit split = choice.reasoning.enabled()
                                   ? choice.reasoning.split(choice.generation, model_.tokenizer(), text, choice.released_bytes)
                                   : ReasoningSplit{{}, text};
  writer.piece(out, choice.shape, answer, split, choice.generation.finished());
  choice.released_bytes += text.size();
  choice.first_event_sent = true;
  choice.streamed_tokens = choice.generation.tokens().size();
  choice.logprobs.clear();
}

void Scheduler::complete_shape(const ShapeWriter& writer, ActiveRequest& request) {
  ChoiceState& choice = request.choices.front();
  const ShapeAnswer answer = shape_answer(request, choice);
  if (request.api.stream) {
    writer.end(request.session->stream_buffer(), choice.shape, answer);
    return request.session->end_stream();
  }
  std::string body;
  writer.body(body, answer);
  request.session->respond(200, "application/json", body);
}

}  // namespace retrace::sim
