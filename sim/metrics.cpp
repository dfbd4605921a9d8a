#include "sim/metrics.hpp"

#include "base/prometheus.hpp"

namespace retrace::sim {

std::string Metrics::prometheus(std::string_view model_name) const {
  PrometheusText text;
  auto metric = [&](std::string_view name, std::string_view type, std::string_view help, std::uint64_t value) {
    text.family(name, type, help);
    text.sample(name, {{"model_name", model_name}}, value);
  };
  metric("retrace_sim_requests_running", "gauge", "Requests in the running batch.", requests_running);
  metric("retrace_sim_requests_waiting", "gauge", "Requests waiting to join the batch.", requests_waiting);
  metric("retrace_sim_batch_sequences", "gauge", "Sequences in the running batch.", sequences_running);
  metric("retrace_sim_batch_sequences_max", "gauge", "Largest batch (sequences) seen since start.", largest_batch);
  metric("retrace_sim_generation_tokens_total", "counter", "Tokens generated.", generation_tokens);
  metric("retrace_sim_prompt_tokens_total", "counter", "Prompt tokens processed.", prompt_tokens);
  metric("retrace_sim_requests_served_total", "counter", "Requests completed.", requests_served);
  metric("retrace_sim_requests_cancelled_total", "counter",
         "Requests dropped because the client went away or the server stopped.", requests_cancelled);
  metric("retrace_sim_steps_total", "counter", "Batch iterations run.", steps);
  return text.take();
}

}  // namespace retrace::sim
