// The scheduler of `retrace serve`: vLLM's continuous batching over the model (see server.hpp).
// Waiting requests join the running batch at the start of an iteration; every running sequence
// advances one token per iteration; streamed tokens go to the session as each iteration ends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "sim/api.hpp"
#include "sim/engine.hpp"
#include "sim/http_session.hpp"
#include "sim/metrics.hpp"
#include "sim/prefix_cache.hpp"
#include "sim/reasoning.hpp"
#include "sim/server.hpp"
#include "sim/shape_out.hpp"

namespace retrace::sim {

struct ChoiceState {
  ChoiceState(Generation generation, int index, std::size_t prompt_index, std::size_t reasoning_tokens = 0)
      : generation(std::move(generation)), index(index), prompt_index(prompt_index), reasoning(reasoning_tokens) {}
  Generation generation;
  int index;
  std::size_t prompt_index;
  std::size_t streamed_tokens = 0;     // tokens already sent in events
  std::size_t text_offset = 0;         // completions logprobs' text_offset of the next token
  std::vector<GeneratedToken> logprobs;  // for tokens not yet sent (stream) or all (non-stream)
  bool first_event_sent = false;
  bool done = false;
  ReasoningBoundary reasoning;   // --reasoning, all but completions (sim/reasoning.hpp)
  std::size_t released_bytes = 0;  // of the text, streamed so far
  bool call_started = false;       // a tool call's first delta is out (sim/tool_calls.hpp)
  ShapeStream shape;               // the Responses and Messages APIs' open item (sim/shape_out.hpp)
};

// A request in the scheduler: its n choices per prompt and the session that waits for them.
struct ActiveRequest {
  // `id` is the response's id ("cmpl-…", "chatcmpl-…", "resp_…", "msg_…"); the model must outlive the request.
  ActiveRequest(ApiRequest api, std::shared_ptr<Session> session, std::string id, const Model& model,
                const ServeOptions& options);

  ApiRequest api;
  std::shared_ptr<Session> session;
  std::string id;
  std::int64_t created = 0;
  std::string chunk_prefix;  // `data: {"id":...,"choices":[` for streamed events
  std::vector<ChoiceState> choices;
  std::size_t unfinished = 0;
  std::size_t prompt_tokens = 0;
  bool fails_mid_stream = false;  // chosen by ServeOptions::fail_mid_stream
  bool failed = false;            // its error event is written; retire() drops it
  std::size_t cached_tokens = 0;  // of prompt_tokens, found in the prefix cache at admission
  // --per-request-metrics: when it arrived, was scheduled and made its first token
  Clock::time_point arrived{}, scheduled{}, first_token{};
};

class Scheduler {
 public:
  // All four must outlive the scheduler.
  Scheduler(boost::asio::io_context& io, const ServeOptions& options, const Model& model, Metrics& metrics)
      : io_(io), options_(options), model_(model), metrics_(metrics), timer_(io) {}

  void submit(std::unique_ptr<ActiveRequest> request);
  // Drops every request (server stopping).
  void abort_all();

 private:
  std::size_t admit();  // returns the prompt tokens admitted
  void schedule_step();
  void run_steps();
  void step();
  void retire();
  void emit(ActiveRequest& request, ChoiceState& choice);
  void emit_shape(const ShapeWriter& writer, ActiveRequest& request, ChoiceState& choice);
  ShapeAnswer shape_answer(const ActiveRequest& request, ChoiceState& choice) const;
  void complete_shape(const ShapeWriter& writer, ActiveRequest& request);
  void put_choice_logprobs(std::string& out, const ActiveRequest& request, ChoiceState& choice);
  void complete(ActiveRequest& request);
  void fail(ActiveRequest& request);
  void look_up_cache(ActiveRequest& request);
  std::optional<std::size_t> reported_cached(const ActiveRequest& request) const;
  void put_timings(std::string& out, const ActiveRequest& request, std::size_t completion_tokens) const;

  boost::asio::io_context& io_;
  const ServeOptions& options_;
  const Model& model_;
  Metrics& metrics_;
  boost::asio::steady_timer timer_;
  PrefixCache prefix_cache_;
  std::deque<std::unique_ptr<ActiveRequest>> waiting_;
  std::vector<std::unique_ptr<ActiveRequest>> running_;
  std::size_t running_sequences_ = 0;
  bool step_scheduled_ = false;
  std::uint64_t streamed_requests_ = 0;  // submitted so far, for fail_mid_stream's choice
};

}  // namespace retrace::sim
