// Embeddings (POST /v1/embeddings; OpenAI, vLLM, SGLang, llama.cpp, TEI's OpenAI route), a whole
// body: {"object":"list","data":[{"index","embedding":[numbers] | "base64 of float32 LE"}],
// "usage":{"prompt_tokens","total_tokens"}}. Each input's vector is part embedding of choice
// `index` (trace.hpp), its values as sent: diff compares them numerically.
#include <cstring>

#include "format/json.hpp"
#include "llm/decoder_impl.hpp"

namespace retrace::llm {

void ResponseDecoder::Impl::read_embeddings(const json::object& root) {
  read_usage(root);
  const json::array* data = array_field(root, "data");
  if (!data) {
    note(where() + ": no \"data\" array");
    return;
  }
  std::uint32_t position = 0;
  for (const json::value& entry_value : *data) {
    const json::object* entry = entry_value.if_object();
    if (!entry) continue;
    // Without an "index", an entry is the next one; an index out of range is corrupt (noted).
    std::uint32_t index = position++;
    if (!read_index(*entry, "embedding", index)) continue;
    Choice& choice = part_of(index, Part::embedding);
    choice.values.clear();
    const json::value* embedding = field(*entry, "embedding");
    if (const json::array* numbers = embedding ? embedding->if_array() : nullptr) {
      choice.values.reserve(numbers->size());
      for (const json::value& number : *numbers) {
        const auto value = number_of(number);
        if (!value) {
          note(where() + ": embedding " + std::to_string(index) + ": a value that is not a number");
          break;
        }
        choice.values.push_back(*value);
      }
    } else if (const json::string* encoded = embedding ? embedding->if_string() : nullptr) {
      const auto bytes = base64_decode(*encoded);
      if (!bytes || bytes->size() % sizeof(float) != 0) {
        note(where() + ": embedding " + std::to_string(index) + ": not base64 of float32 values");
        continue;
      }
      choice.values.resize(bytes->size() / sizeof(float));
      for (std::size_t v = 0; v < choice.values.size(); ++v) {
        float value;  // little-endian, as numpy's float32 tobytes() on the servers' machines
        std::memcpy(&value, bytes->data() + v * sizeof(float), sizeof value);
        choice.values[v] = value;
      }
    } else {
      note(where() + ": embedding " + std::to_string(index) + ": no \"embedding\"");
    }
  }
}

}  // namespace retrace::llm
