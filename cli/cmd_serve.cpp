// `retrace serve`: the embedded reference server (sim/). Only wiring: options in, serve() out.
#include <iostream>
#include <stdexcept>

#include "cli/commands.hpp"
#include "cli/durations.hpp"
#include "sim/server.hpp"

namespace retrace::cli {

void add_serve(CLI::App& root, Registry& registry) {
  auto options = std::make_shared<sim::ServeOptions>();
  auto latency = std::make_shared<std::string>("on");
  auto drain_timeout = std::make_shared<std::chrono::milliseconds>(5000);
  CLI::App* command = root.add_subcommand(
      "serve",
      "Run the built-in OpenAI-compatible LLM server SIMULATOR (not a real model): a deterministic toy "
      "model with continuous batching and a realistic latency model, the default target for demos and "
      "tests. Answers /v1/completions, /v1/chat/completions, /v1/responses, /v1/messages (Anthropic's "
      "Messages API), /v1/embeddings and /tokenize. Point --target at a real server (vLLM, SGLang, TGI, llama.cpp) for real measurements.");
  command->add_option("--listen", options->listen, "HOST:PORT to listen on; port 0 picks a free one")
      ->capture_default_str();
  auto names = std::make_shared<std::vector<std::string>>(1, options->model_name);
  command->add_option("--model-name,--model", *names,
                      "Model id(s) served, repeatable (requests naming another get 404; answers name "
                      "the first, as vLLM's --served-model-name does)")
      ->capture_default_str();
  command->add_flag("--batch-variance", options->batch_variance,
                    "Make outputs depend on the batch, as batched GPU kernels can: the model's dot products are "
                    "split reductions whose split count follows the running batch size (16 splits at batch 1-2, "
                    "8 at 3-8, 4 at 9-32, 2 above) with bfloat16 partial sums, so near-tied greedy choices flip "
                    "under load. Off: a fixed split, bit-identical outputs at any concurrency.");
  auto prefix_cache = std::make_shared<std::string>("on");
  command->add_option("--prefix-cache", *prefix_cache,
                      "on: prompts reuse cached 16-token blocks of earlier prompts, as vLLM's automatic prefix "
                      "caching does (a request's cache_salt keeps it apart, cache_prompt: false skips the cache) and "
                      "usage reports prompt_tokens_details.cached_tokens; off: no cache, no cached_tokens")
      ->capture_default_str()
      ->check(CLI::IsMember({"on", "off"}));
  command->add_flag("--cache-variance", options->cache_variance,
                    "Make outputs depend on the prefix cache, as a cached prefix's other kernels can: a request "
                    "that reused cached blocks adds its dot products' partial sums in the reverse order, so "
                    "near-tied greedy choices flip between a cold and a warm pass. Off: a hit changes nothing but cached_tokens.");
  command->add_flag("--per-request-metrics", options->per_request_metrics,
                    "End each completion's and chat's answer with its own timings as vLLM's "
                    "--enable-per-request-metrics does: \"metrics\":{queue_time_ms, time_to_first_token_ms, "
                    "generation_time_ms, mean_itl_ms, tokens_per_second} in the final usage chunk (a chunk of its "
                    "own without stream_options.include_usage) or the body");
  command->add_option("--max-batch", options->max_batch, "Most sequences in the running batch")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  command->add_option("--max-model-len", options->max_model_len, "Context length: prompt + completion tokens")
      ->capture_default_str()
      ->check(CLI::Range(16, 1 << 20));
  command->add_option("--latency-model", *latency,
                      "on: each batch iteration costs --decode-step-ms + --decode-ms-per-sequence x batch + "
                      "--prefill-ms-per-token x newly admitted prompt tokens (defaults resemble a 3B model on one "
                      "mid-range GPU: ~80 tokens/s for one stream); off: iterations run flat out")
      ->capture_default_str()
      ->check(CLI::IsMember({"on", "off"}));
  command->add_option("--prefill-ms-per-token", options->prefill_ms_per_token, "Prefill cost per prompt token (ms)")
      ->capture_default_str();
  command->add_option("--decode-step-ms", options->decode_step_ms, "Fixed cost of one batch iteration (ms)")
      ->capture_default_str();
  command->add_option("--decode-ms-per-sequence", options->decode_ms_per_sequence,
                      "Added cost of one iteration per sequence in the batch (ms)")
      ->capture_default_str();
  command->add_option("--stream-interval", options->stream_interval,
                      "Coalesce up to K tokens per SSE event, as vLLM does under load")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  command->add_option("--reasoning", options->reasoning_tokens,
                      "Chat, Responses and Messages answers reason first, as vLLM's --reasoning-parser returns it: the "
                      "first N tokens of each choice are sent as reasoning_content (a reasoning item; a thinking "
                      "block), the rest as content")
      ->check(CLI::NonNegativeNumber);
  command->add_option("--answers", options->answers_path,
                      "JSONL of known answers: {\"prompt\" or \"messages\": ..., \"answer\": \"...\"} per line; a "
                      "matching request gets that answer, streamed token by token, finish_reason stop")
      ->check(CLI::ExistingFile);
  command->add_option("--weights-seed", options->weights_seed,
                      "Seed of the toy model's weights; keep the default so runs stay comparable")
      ->capture_default_str();
  command->add_option("--fail-mid-stream", options->fail_mid_stream,
                      "Fault injection: this fraction of streamed requests (0..1, spread evenly) fails after "
                      "--fail-after-tokens tokens with vLLM's error event (data: {\"error\": {...}}) and [DONE], "
                      "as an engine that runs out of memory does after its 200 header")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  command->add_option("--fail-after-tokens", options->fail_after_tokens,
                      "Tokens a --fail-mid-stream request streams before its error event")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  command->add_option("--max-body", options->max_body, "Largest request body in bytes (413 above)")
      ->capture_default_str();
  add_duration_option(*command, "--idle-timeout", options->idle_timeout,
                      "Close a connection that sends no whole request header for this long",
                      std::chrono::milliseconds(1))
      ->default_str(format_duration(options->idle_timeout));
  add_duration_option(*command, "--drain-timeout", *drain_timeout,
                      "On SIGINT/SIGTERM, how long in-flight requests may finish before connections are cut")
      ->default_str(format_duration(*drain_timeout));
  add_renamed_option(*command, "--drain-timeout-ms", "--drain-timeout with a unit, e.g. --drain-timeout 5s");
  command->footer(
      "Example:\n  retrace serve --listen 127.0.0.1:0 --batch-variance\n"
      "  curl -s http://127.0.0.1:PORT/v1/completions -d '{\"prompt\": \"Hello\", \"max_tokens\": 8, "
      "\"temperature\": 0}'\n"
      "Prints 'listening on http://HOST:PORT' once ready; SIGINT/SIGTERM stop it cleanly (exit 0).");
  registry.add(command, [options, latency, drain_timeout, names, prefix_cache] {
    options->prefix_cache = *prefix_cache == "on";
    if (options->cache_variance && !options->prefix_cache)
      throw std::invalid_argument("--cache-variance needs the prefix cache: drop --prefix-cache off");
    options->model_name = names->front();
    options->more_model_names.assign(names->begin() + 1, names->end());
    options->latency_model = *latency == "on";
    options->drain_timeout = *drain_timeout;
    return sim::serve(*options, std::cout, std::cerr);
  });
}

}  // namespace retrace::cli
