// `retrace serve`'s embeddings (sim/embeddings.hpp).
#include "sim/embeddings.hpp"

#include <cmath>
#include <cstring>
#include <vector>

#include <boost/json.hpp>

#include "base/splitmix.hpp"
#include "format/json.hpp"
#include "sim/api.hpp"
#include "sim/json_out.hpp"

namespace retrace::sim {

namespace json = boost::json;

namespace {

std::vector<float> embed(const std::vector<TokenId>& tokens, const ServeOptions& options, std::size_t batch) {
  std::vector<float> values(kEmbeddingDims);
  double norm = 0;
  for (std::size_t d = 0; d < kEmbeddingDims; ++d) {
    std::uint64_t h = splitmix64_finalise(options.weights_seed ^ (d * kSplitmixGamma));
    for (TokenId token : tokens) h = splitmix64_finalise(h ^ std::uint64_t(token));
    values[d] = float(double(h >> 11) / double(1ull << 53) * 2 - 1);
    norm += double(values[d]) * values[d];
  }
  const float scale = norm > 0 ? float(1 / std::sqrt(norm)) : 1.0f;
  for (float& value : values) {
    value *= scale;
    // A batch-dependent rounding: the last bits move with the request's size, as a batched
    // reduction's order would move them.
    if (options.batch_variance && batch > 1) value = std::nextafter(value, batch % 2 ? 1.0f : -1.0f);
  }
  return values;
}

ApiError bad(std::string param, std::string message) { return ApiError{400, std::move(message), std::move(param), {}}; }

}  // namespace

std::string embeddings_body(std::string_view request_body, const Model& model, const ServeOptions& options) {
  json::error_code ec;
  const json::value document = json::parse(request_body, ec);
  if (ec || !document.is_object()) throw bad("", "request body is not a JSON object");
  const json::object& body = document.get_object();
  const json::value* input = body.if_contains("input");
  if (!input) throw bad("input", "missing required parameter 'input'");
  std::vector<std::vector<TokenId>> inputs;
  const auto add = [&](const json::value& value) {
    if (value.is_string()) return inputs.push_back(model.tokenizer().encode(value.get_string()));
    throw bad("input", "'input' must be a string, a list of strings or a list of token ids");
  };
  if (const json::array* list = input->if_array()) {
    if (list->empty()) throw bad("input", "'input' must not be empty");
    if (list->front().is_number()) {
      std::vector<TokenId> tokens;
      for (const json::value& token : *list) {
        if (!token.is_int64()) throw bad("input", "a token id list must hold integers");
        tokens.push_back(TokenId(token.get_int64()));
      }
      inputs.push_back(std::move(tokens));
    } else {
      for (const json::value& value : *list) add(value);
    }
  } else {
    add(*input);
  }
  bool base64 = false;
  if (const json::value* format = body.if_contains("encoding_format"); format && !format->is_null()) {
    if (*format == "base64") base64 = true;
    else if (*format != "float") throw bad("encoding_format", "'encoding_format' must be \"float\" or \"base64\"");
  }

  std::string out = "{\"object\":\"list\",\"data\":[";
  std::size_t prompt_tokens = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    prompt_tokens += inputs[i].size();
    const std::vector<float> values = embed(inputs[i], options, inputs.size());
    if (i) out += ',';
    out += "{\"object\":\"embedding\",\"index\":";
    put_number(out, i);
    out += ",\"embedding\":";
    if (base64) {
      std::string bytes(values.size() * sizeof(float), '\0');
      std::memcpy(bytes.data(), values.data(), bytes.size());  // little-endian, as the API sends it
      put_string(out, base64_encode(bytes));
    } else {
      out += '[';
      for (std::size_t d = 0; d < values.size(); ++d) {
        if (d) out += ',';
        put_number(out, values[d]);
      }
      out += ']';
    }
    out += '}';
  }
  out += "],\"model\":";
  put_string(out, options.model_name);
  out += ",\"usage\":{\"prompt_tokens\":";
  put_number(out, prompt_tokens);
  out += ",\"total_tokens\":";
  put_number(out, prompt_tokens);
  out += "}}";
  return out;
}

}  // namespace retrace::sim
