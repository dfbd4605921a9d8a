// POST /v1/embeddings of `retrace serve`: OpenAI's embeddings shape, so that a trace of embedding
// traffic can be recorded, replayed and compared numerically without a GPU. Each input's vector
// (kEmbeddingDims values, unit length) is a deterministic function of its tokens and the weights
// seed; with --batch-variance, the values of inputs sent in one request move by a few float32
// ulps depending on how many inputs share it, as batched kernels do — differences diff measures
// with --embedding-tolerance.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "sim/engine.hpp"
#include "sim/server.hpp"

namespace retrace::sim {

inline constexpr std::size_t kEmbeddingDims = 16;

// The response body for a request body {"model", "input": string or [strings] or [token ids],
// "encoding_format"?: "float" | "base64"}. Throws ApiError (sim/api.hpp) for a bad request.
std::string embeddings_body(std::string_view request_body, const Model& model, const ServeOptions& options);

}  // namespace retrace::sim
