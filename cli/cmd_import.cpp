// `retrace import`: a JSONL dataset, an OpenAI Batch input file or a public serving trace
// (Mooncake, Qwen-Bailian, Azure, BurstGPT, ShareGPT) becomes a trace.
#include <iostream>

#include "cli/commands.hpp"
#include "cli/outputs.hpp"
#include "dataset/import.hpp"
#include "dataset/trace_import.hpp"
#include "net/tokenizer_client.hpp"
#include "version.hpp"

namespace retrace::cli {

namespace {

void say_lone_surrogates(std::uint64_t count) {
  if (count == 0) return;
  std::cerr << "replaced " << count << " lone UTF-16 surrogate escape" << (count == 1 ? "" : "s")
            << " (\\uD800-\\uDFFF without its other half: no character) with U+FFFD\n";
}

}  // namespace

void add_import(CLI::App& root, Registry& registry) {
  auto options = std::make_shared<ImportOptions>();
  auto input = std::make_shared<std::string>();
  auto output = std::make_shared<std::string>();
  auto tokenizer_url = std::make_shared<std::string>();
  auto force = std::make_shared<bool>(false);
  auto max_turns = std::make_shared<std::size_t>(kDefaultMaxTurns);
  CLI::App* command = root.add_subcommand(
      "import",
      "Turn a dataset into a trace of requests (no responses), ready to replay. Input is JSONL, one "
      "object per line: {\"prompt\": ...} or {\"messages\": [...]} or {\"request\": {whole body}}, "
      "with optional \"expected\" (the right answer, for gold checks) and \"id\"; or the OpenAI "
      "Batch API input format (custom_id, method, url, body). Bodies get temperature 0 and "
      "max_tokens unless the line gives them (or max_completion_tokens), and a model only with --model: "
      "replay gives the "
      "target's. Public serving traces (Mooncake, Qwen-Bailian, Azure, BurstGPT, ShareGPT; plain, "
      ".gz or .zst) keep each row's send time for replay --timing recorded and their conversations "
      "as sessions; length-only rows get synthetic prompts whose bodies carry max_tokens (the "
      "recorded output length) and ignore_eos (see traces/README.md). What `retrace export` writes "
      "comes back as the trace it was (header kept, secrets redacted again), so a trace can be "
      "filtered or edited as text. The format is told from the "
      "first 64 KiB unless --from names it. A lone UTF-16 surrogate escape (\\ud83d alone) is read as "
      "U+FFFD and counted. A bad line stops the import with its line number and "
      "leaves no output file.");
  command->footer(
      "Example:\n  retrace import traces/gold-intents.jsonl --out gold.rtrace\n"
      "  retrace import batch.jsonl --from openai-batch --out batch.rtrace\n"
      "  retrace import mooncake_trace.jsonl --out mooncake.rtrace\n"
      "  retrace export run.rtrace | jq -c 'select(.header or .exchange.response.status == 200)' "
      "> ok.jsonl && retrace import ok.jsonl --out ok.rtrace\n"
      "  retrace replay mooncake.rtrace --target http://127.0.0.1:8000 --timing recorded --speed 2 "
      "--out run.rtrace");
  command->add_option("IN", *input, "the file to read")->required();
  command->add_option("--out,-o", *output, "the trace to write (OUT.rtrace)")->required();
  add_force_flag(*command, *force, "replace an existing --out (never IN)");
  options->from = "auto";
  command->add_option("--from", options->from, "input format (auto: told from the start of the file)")
      ->check(CLI::IsMember({"auto", "jsonl", "openai-batch", "export", "mooncake", "bailian", "azure",
                             "burstgpt", "sharegpt"}))
      ->capture_default_str();
  command->add_option("--endpoint", options->endpoint,
                      "where \"prompt\" and \"messages\" lines (and whole bodies, for responses, messages and "
                      "embeddings) go: /v1/chat/completions, /v1/completions, /v1/responses, /v1/messages or "
                      "/v1/embeddings; a trace's synthetic prompts: chat or completions")
      ->check(CLI::IsMember({"chat", "completions", "responses", "messages", "embeddings"}))
      ->capture_default_str();
  command->add_option("--model", options->model, "model name for bodies that give none (default: none; replay fills in the target's)")
      ->capture_default_str();
  command->add_flag("--greedy", options->greedy,
                    "temperature 0 on every request, also where a line asks for another (a study of "
                    "repeatability wants greedy requests: retrace study refuses others)");
  command->add_option("--max-tokens", options->max_tokens,
                      "max_tokens for bodies that give none (ShareGPT: turns with no answer)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command->add_option("--max-turns", *max_turns,
                      "ShareGPT: the first N user turns of each conversation become requests, the "
                      "rest are left out and counted (turn k carries the k turns before it, so a "
                      "conversation's cost grows with the square of its turns)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command->add_option("--tokenizer-url", *tokenizer_url,
                      "synthetic prompts of exactly the trace's token counts, as counted by this "
                      "tokenize endpoint (vLLM, SGLang, llama.cpp, retrace serve: "
                      "http://HOST:PORT/tokenize); without it, one word counts as one token");
  command->add_option("--flush-every", options->writer.flush_every,
                      "close a zstd frame every N exchanges")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  registry.add(command, [options, input, output, tokenizer_url, force, max_turns] {
    check_output_file(*output, {*input}, *force, "--out");
    options->tool_version = kToolVersion;
    if (options->from == "auto") options->from = detect_import_format(*input);
    if (is_trace_format(options->from)) {
      TraceImportOptions trace;
      trace.from = options->from;
      trace.endpoint = options->endpoint;
      trace.max_tokens = options->max_tokens;
      trace.max_turns = *max_turns;
      trace.tool_version = options->tool_version;
      trace.writer = options->writer;
      if (!tokenizer_url->empty()) {
        trace.count_tokens = net::remote_token_counter(*tokenizer_url);
        trace.tokenizer_url = *tokenizer_url;
      }
      TraceImportSummary summary = import_trace(*input, *output, trace);
      std::cerr << "imported " << summary.written << " requests";
      if (summary.sessions)
        std::cerr << " in " << summary.sessions << (summary.sessions == 1 ? " session" : " sessions");
      std::cerr << " from " << *input << " (" << trace.from << ") into " << *output << "\n";
      if (summary.skipped)
        std::cerr << "skipped " << summary.skipped << " rows that failed in production\n";
      if (summary.inexact_prompts)
        std::cerr << "warning: " << summary.inexact_prompts << " prompts could not be brought to "
                  << "their exact token count (closest kept; see traces/README.md)\n";
      if (summary.cut_conversations)
        std::cerr << "warning: " << summary.cut_conversations
                  << (summary.cut_conversations == 1 ? " conversation has" : " conversations have")
                  << " more than " << trace.max_turns << " user turns; only the first " << trace.max_turns
                  << " of each were imported (--max-turns)\n";
      if (summary.out_of_order)
        std::cerr << "warning: " << summary.out_of_order << (summary.out_of_order == 1 ? " row is" : " rows are")
                  << " earlier than the row before it (the first at " << summary.first_out_of_order
                  << "); --timing recorded sends each at its own time, so the replay's "
                     "order is not the file's: sort the rows by time to keep them together\n";
      say_lone_surrogates(summary.lone_surrogates);
      return kExitOk;
    }
    if (!tokenizer_url->empty())
      throw std::invalid_argument("--tokenizer-url is for length-only traces (mooncake, bailian, "
                                  "azure, burstgpt) and sharegpt, not " + options->from);
    ImportNotes notes;
    if (options->from == "export") {
      std::uint64_t count = import_export_lines(*input, *output, *options, &notes);
      std::cerr << "imported " << count << (count == 1 ? " exchange" : " exchanges") << " from "
                << *input << " (retrace export lines) into " << *output << "\n";
      say_lone_surrogates(notes.lone_surrogates);
      return kExitOk;
    }
    std::uint64_t count = import_dataset(*input, *output, *options, &notes);
    std::cerr << "imported " << count << " requests from " << *input << " into " << *output
              << "\n";
    say_lone_surrogates(notes.lone_surrogates);
    return kExitOk;
  });
}

}  // namespace retrace::cli
