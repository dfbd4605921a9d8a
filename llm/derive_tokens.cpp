// Format 1.7: an exchange's tokens derived from its stored events by the loop live decoding runs
// (feed_sse into a ResponseDecoder, then finish), installed into format/ as its TokenDeriver.
#include "format/token_deriver.hpp"
#include "llm/derive_tokens.hpp"

namespace retrace::llm {

Dialect dialect_from_string(std::string_view name) {
  for (Dialect dialect : {Dialect::openai_completions, Dialect::openai_chat, Dialect::llamacpp_completion,
                          Dialect::tgi_generate, Dialect::openai_responses, Dialect::anthropic_messages,
                          Dialect::openai_embeddings})
    if (to_string(dialect) == name) return dialect;
  return Dialect::unknown;
}

void derive_choices(std::string_view dialect, const std::vector<EventView>& events, std::vector<Choice>& choices,
                    DecodeWants wants) {
  // One decoder per thread, reset per exchange: its set-up allocates ~20 KiB (ResponseDecoder).
  thread_local ResponseDecoder decoder(Dialect::unknown);
  thread_local Exchange finished;
  decoder.reset(dialect_from_string(dialect), wants);
  SseParser parser;
  for (const EventView& event : events) feed_sse(parser, event.data, event.offset_ns, &decoder, nullptr);
  finished.response.streamed = true;
  finished.error = {};
  decoder.finish(finished);
  choices.swap(finished.choices);
}

void install_token_deriver() { retrace::install_token_deriver(&derive_choices); }

}  // namespace retrace::llm
