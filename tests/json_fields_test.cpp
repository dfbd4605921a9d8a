// base/json_fields.hpp: the tolerant and the strict flavour of JSON field access, and the trace's
// JSON view (format/json_read.cpp) read through the strict one.
#include <catch2/catch.hpp>

#include <boost/json.hpp>

#include "base/json_fields.hpp"
#include "format/json.hpp"

using namespace retrace;
namespace json = boost::json;

namespace {

json::object object_of(std::string_view text) { return json::parse(text).as_object(); }

}  // namespace

TEST_CASE("the tolerant flavour reads a mistyped field as absent") {
  const auto object = object_of(R"({"n": "12", "s": 5, "b": 1, "o": [], "real": 12.0})");
  CHECK_FALSE(integer_field(object, "n"));
  CHECK_FALSE(string_field(object, "s"));
  CHECK_FALSE(bool_field(object, "b"));
  CHECK(object_field(object, "o") == nullptr);
  CHECK(integer_field(object, "real") == 12);  // servers write counts as 12.0
  CHECK_FALSE(number_field(object, "missing"));
}

TEST_CASE("the strict flavour names the file and the whole path of a mistyped field") {
  const auto object = object_of(R"({"runs": [{"repeat": "two"}]})");
  const StrictFields fields(object, "plan.json");
  const auto& run = fields.array("runs")->front().as_object();
  const StrictFields run_fields = fields.nested(run, "runs.0");
  CHECK_THROWS_WITH(run_fields.integer<int>("repeat"),
                    "plan.json: field \"runs.0.repeat\": expected an integer");
  CHECK_THROWS_WITH(fields.string("runs"), "plan.json: field \"runs\": expected a string");
}

TEST_CASE("the strict flavour reads absent and null alike and refuses a required field missing") {
  const auto object = object_of(R"({"gone": null})");
  const StrictFields fields(object, "study.json");
  CHECK_FALSE(fields.integer<int>("gone"));
  CHECK_FALSE(fields.string("never"));
  CHECK_THROWS_WITH(fields.string("never", Presence::required),
                    "study.json: missing field \"never\"");
}

TEST_CASE("the strict flavour refuses an integer that does not fit its field rather than wrapping it") {
  const auto object = object_of(R"({"id": 4294967296, "count": -1, "fits": 2147483647})");
  const StrictFields fields(object);
  CHECK_THROWS_WITH(fields.integer<std::int32_t>("id"), "field \"id\": expected an integer that fits");
  CHECK_THROWS_AS(fields.integer<std::uint32_t>("count"), FieldError);
  CHECK(fields.integer<std::int32_t>("fits") == 2147483647);
}

TEST_CASE("the trace's JSON view names a mistyped token field by its whole path") {
  Exchange back;
  const auto exchange = object_of(
      R"({"choices": [{"index": 0, "tokens": [{"id": 1}, {"id": 2, "logprob": "low"}]}]})");
  CHECK_THROWS_WITH(exchange_from_json(exchange, back),
                    "field \"choices.0.tokens.1.logprob\": expected a number");
}

TEST_CASE("the trace's JSON view refuses a token id too large for a token id") {
  // It was cast to 32 bits: 2^32 read back as token 0, a different token from the one written.
  Exchange back;
  const auto exchange = object_of(R"({"choices": [{"tokens": [{"id": 4294967296}]}]})");
  CHECK_THROWS_AS(exchange_from_json(exchange, back), TraceError);
  CHECK_THROWS_WITH(exchange_from_json(exchange, back),
                    "field \"choices.0.tokens.0.id\": expected an integer that fits");
}
