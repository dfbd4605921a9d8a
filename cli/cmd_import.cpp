// `retrace import`: a JSONL dataset or OpenAI Batch input file becomes a trace.
#include <iostream>

#include "cli/commands.hpp"
#include "cli/outputs.hpp"
#include "format/import.hpp"
#include "version.hpp"

namespace retrace::cli {

void add_import(CLI::App& root, Registry& registry) {
  auto options = std::make_shared<ImportOptions>();
  auto input = std::make_shared<std::string>();
  auto output = std::make_shared<std::string>();
  auto force = std::make_shared<bool>(false);
  CLI::App* command = root.add_subcommand(
      "import",
      "Turn a dataset into a trace of requests (no responses), ready to replay. Input is JSONL, one "
      "object per line: {\"prompt\": ...} or {\"messages\": [...]} or {\"request\": {whole body}}, "
      "with optional \"expected\" (the right answer, for gold checks) and \"id\"; or the OpenAI "
      "Batch API input format (custom_id, method, url, body). Bodies get model, temperature 0 and "
      "max_tokens unless the line gives them. A bad line stops the import with its line number "
      "and leaves no output file.");
  command->footer(
      "Example:\n  retrace import traces/gold-intents.jsonl --out gold.rtrace\n"
      "  retrace import batch.jsonl --from openai-batch --out batch.rtrace");
  command->add_option("IN", *input, "the JSONL file to read")->required();
  command->add_option("--out,-o", *output, "the trace to write (OUT.rtrace)")->required();
  add_force_flag(*command, *force, "replace an existing --out (never IN)");
  command->add_option("--from", options->from, "input format")
      ->check(CLI::IsMember({"jsonl", "openai-batch"}))
      ->capture_default_str();
  command->add_option("--endpoint", options->endpoint, "where \"prompt\" lines go")
      ->check(CLI::IsMember({"chat", "completions"}))
      ->capture_default_str();
  command->add_option("--model", options->model, "model name for bodies that give none")
      ->capture_default_str();
  command->add_option("--max-tokens", options->max_tokens, "max_tokens for bodies that give none")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command->add_option("--flush-every", options->writer.flush_every,
                      "close a zstd frame every N exchanges")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  registry.add(command, [options, input, output, force] {
    check_output_file(*output, {*input}, *force, "--out");
    options->tool_version = kToolVersion;
    std::uint64_t count = import_dataset(*input, *output, *options);
    std::cerr << "imported " << count << " requests from " << *input << " into " << *output
              << "\n";
    return kExitOk;
  });
}

}  // namespace retrace::cli
