// Typed field access for `retrace serve`'s request parsers (sim/api.cpp, sim/api_shapes.cpp): a field
// that is absent or null is not there; a wrong one throws ApiError 400 naming it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json.hpp>

#include "sim/api.hpp"

namespace retrace::sim {

[[noreturn]] void reject(std::string param, std::string message);

const boost::json::value* field(const boost::json::object& body, std::string_view name);
std::optional<std::int64_t> integer_field(const boost::json::object& body, std::string_view name, std::int64_t min,
                                          std::int64_t max);
std::optional<double> number_field(const boost::json::object& body, std::string_view name, double min, double max);
bool bool_field(const boost::json::object& body, std::string_view name);

// The request body as a JSON object; a 404 for a model this server does not serve.
boost::json::value parse_object(std::string_view text, const ServeOptions& options);
void check_model(const boost::json::object& body, const ServeOptions& options);

// The Responses API's "input" (with "instructions") and the Messages API's "messages" (with
// "system"), read into the prompt and known answer of `request` (sim/api_shapes.cpp).
void read_responses_input(const boost::json::object& body, const ParseContext& context, ApiRequest& request);
void read_messages_input(const boost::json::object& body, const ParseContext& context, ApiRequest& request);
// Their "tools": the first function's name, unless tool_choice says none.
void read_shape_tools(const boost::json::object& body, ApiRequest& request);

}  // namespace retrace::sim
