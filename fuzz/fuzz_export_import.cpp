// `retrace export` then `retrace import --from export`: exchanges built from the input bytes (any
// field, any bytes) are written to a trace, read back as export reads it, exported line by line
// and imported; the imported trace must hold the same header and exchanges. Two differences are
// the round trip's by design, and are applied to the expectation: import redacts again with the
// default policy, and export writes the two free-text fields (error message, decode note) as UTF-8,
// a byte that is not becoming U+FFFD. What has no export is not built: label keys are unique
// names, and -1 is the one negative of the fields where it means absent. A trace the reader
// refuses is not exported (it has no export), and an exchange sent before the run's start or more
// than 100 years after it is one import refuses by rule (kMaxScheduleSpan, base/time.hpp);
// anything else import refuses is a finding.
#include <fuzzer/FuzzedDataProvider.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/text.hpp"
#include "base/time.hpp"
#include "dataset/import.hpp"
#include "dataset/trace_import.hpp"
#include "format/header.hpp"
#include "format/json.hpp"
#include "format/redaction.hpp"
#include "format/trace.hpp"
#include "llm/derive_tokens.hpp"

namespace {

using namespace retrace;

std::string bytes(FuzzedDataProvider& in, std::size_t most = 64) { return in.ConsumeRandomLengthString(most); }

template <class Enum>
Enum pick(FuzzedDataProvider& in, int count) {
  return static_cast<Enum>(in.ConsumeIntegralInRange<int>(0, count - 1));
}

float finite_float(FuzzedDataProvider& in) {
  return static_cast<float>(in.ConsumeIntegralInRange<std::int32_t>(-100000, 100000)) / 64.0f;
}

// The trace's "absent" -1 or a count: export writes -1 as null, so other negatives have no export.
std::int64_t count_or_absent(FuzzedDataProvider& in) {
  return in.ConsumeBool() ? -1 : in.ConsumeIntegralInRange<std::int64_t>(0, INT64_MAX);
}

// Labels are a map from a name: unique keys.
std::vector<Label> labels(FuzzedDataProvider& in) {
  static const char* names[] = {"id", "run", "turn", "tier"};
  std::vector<Label> out;
  for (const char* name : names)
    if (in.ConsumeBool()) out.push_back({name, bytes(in, 16)});
  return out;
}

std::vector<HttpHeader> headers(FuzzedDataProvider& in) {
  std::vector<HttpHeader> out(in.ConsumeIntegralInRange<std::size_t>(0, 3));
  // Mostly a name that may go on the wire: the trace reader refuses a request that cannot.
  for (auto& header : out) header = {in.ConsumeBool() ? "X-" + bytes(in, 8) : bytes(in, 16), bytes(in)};
  return out;
}

Exchange exchange(FuzzedDataProvider& in, std::uint64_t id) {
  Exchange e;
  e.id = in.ConsumeBool() ? id : in.ConsumeIntegral<std::uint64_t>();
  if (in.ConsumeBool()) e.source_id = in.ConsumeIntegral<std::uint64_t>();
  e.session_id = bytes(in, 16);
  e.start_unix_ns = in.ConsumeIntegral<std::int64_t>();
  e.intended_send_ns = in.ConsumeIntegral<std::int64_t>();
  e.actual_send_ns = in.ConsumeIntegral<std::int64_t>();
  e.first_byte_ns = count_or_absent(in);
  e.end_ns = count_or_absent(in);
  e.request.method = in.ConsumeBool() ? "POST" : bytes(in, 8);
  e.request.target = in.ConsumeBool() ? "/v1/" + bytes(in, 32) : bytes(in, 32);
  e.request.headers = headers(in);
  e.request.body = bytes(in, 256);
  e.key = request_key(e.request.method, e.request.target, e.request.body);
  e.response.status = in.ConsumeIntegral<std::uint16_t>();
  e.response.headers = headers(in);
  e.response.streamed = in.ConsumeBool();
  if (e.response.streamed) {
    for (auto n = in.ConsumeIntegralInRange<std::size_t>(0, 3); n > 0; --n) {
      const auto offset_ns = in.ConsumeIntegral<std::int64_t>();
      e.response.events.push_back(offset_ns, bytes(in));
    }
  } else {
    e.response.body = bytes(in, 256);
  }
  e.choices.resize(in.ConsumeIntegralInRange<std::size_t>(0, 2));
  for (auto& choice : e.choices) {
    choice.index = in.ConsumeIntegralInRange<std::uint32_t>(0, 3);
    choice.kind = pick<TokenKind>(in, 4);
    choice.part = pick<Part>(in, 5);
    if (choice.part == Part::tool_call) {  // the only part that has them
      choice.tool_call = in.ConsumeIntegralInRange<std::uint32_t>(0, 3);
      choice.tool_name = bytes(in, 16);
    }
    choice.finish_reason = bytes(in, 8);
    choice.tokens.resize(in.ConsumeIntegralInRange<std::size_t>(0, 4));
    for (auto& token : choice.tokens) {
      token.id = static_cast<std::int32_t>(in.ConsumeBool() ? -1 : in.ConsumeIntegralInRange<std::int32_t>(0, INT32_MAX));
      token.bytes = bytes(in, 8);
      token.has_logprob = in.ConsumeBool();
      if (token.has_logprob) token.logprob = finite_float(in);
      token.offset_ns = in.ConsumeIntegral<std::int64_t>();
      for (std::size_t a = in.ConsumeIntegralInRange<std::size_t>(0, 2); a > 0; --a)
        choice.add_alternative(token) = {in.ConsumeBool() ? -1 : in.ConsumeIntegralInRange<std::int32_t>(0, INT32_MAX), bytes(in, 8),
                       finite_float(in)};
    }
    choice.values.resize(in.ConsumeIntegralInRange<std::size_t>(0, 2));
    for (auto& value : choice.values) value = finite_float(in);
  }
  std::sort(e.choices.begin(), e.choices.end(), choice_order);
  e.usage = {count_or_absent(in), count_or_absent(in), count_or_absent(in), count_or_absent(in)};
  e.error = {pick<ErrorKind>(in, static_cast<int>(kErrorKindCount)), bytes(in, 32)};
  e.labels = labels(in);
  if (in.ConsumeBool()) e.expected = bytes(in, 16);
  e.dialect = bytes(in, 8);
  e.decode_note = bytes(in, 32);
  e.retries = in.ConsumeIntegralInRange<std::uint8_t>(0, 1);
  return e;
}

bool import_accepts_offsets(const Exchange& e) {
  for (auto ns : {e.intended_send_ns, e.actual_send_ns})
    if (ns < 0 || ns > kMaxScheduleSpan.count()) return false;
  return true;
}

}  // namespace

// Format 1.7's derived tokens are rebuilt by the decoder, as in every program that reads traces.
static const bool kTokenDeriverInstalled = (retrace::llm::install_token_deriver(), true);

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  static const auto dir = std::filesystem::temp_directory_path();
  static const std::string stem = "retrace-fuzz-export-import-" + std::to_string(::getpid());
  static const auto trace_path = dir / (stem + ".rtrace"), lines_path = dir / (stem + ".jsonl"),
                    back_path = dir / (stem + "-back.rtrace");

  TraceHeader header;
  header.tool_version = bytes(in, 16);
  header.created_unix_ns = in.ConsumeIntegral<std::int64_t>();
  header.source = pick<Source>(in, 3);
  header.target = bytes(in, 32);
  header.settings = in.ConsumeBool() ? "{}" : bytes(in, 64);
  header.host = bytes(in, 16);
  header.labels = labels(in);
  header.server_info = in.ConsumeBool() ? "" : bytes(in, 64);
  std::vector<Exchange> written;
  for (std::uint64_t id = 0; in.remaining_bytes() > 0 && id < 8; ++id) written.push_back(exchange(in, id));

  // The trace as export reads it: what its reader gives back (it refuses, for one, requests that
  // cannot go on the wire).
  std::vector<Exchange> exchanges;
  TraceHeader read_header;
  try {
    {
      TraceWriter writer(trace_path, header);
      for (const auto& e : written) writer.write(e);
      writer.close();
    }
    TraceReader reader(trace_path);
    read_header = reader.header();
    Exchange e;
    while (reader.next(e)) exchanges.push_back(e);
  } catch (const TraceError&) {
    return 0;
  }
  bool offsets_in_bounds = true;
  for (const auto& e : exchanges) offsets_in_bounds = offsets_in_bounds && import_accepts_offsets(e);
  {
    std::ofstream lines(lines_path, std::ios::binary | std::ios::trunc);
    lines << header_line(read_header) << '\n';
    for (const auto& e : exchanges) lines << exchange_line(e) << '\n';
  }
  ImportOptions options;
  options.from = "export";
  std::filesystem::remove(back_path);
  try {
    import_export_lines(lines_path, back_path, options);
  } catch (const TraceError& e) {
    if (!offsets_in_bounds) return 0;
    std::fprintf(stderr, "import refused what export wrote: %s\n", e.what());
    std::abort();
  }
  if (!offsets_in_bounds) {
    std::fprintf(stderr, "import took a send offset outside its bounds\n");
    std::abort();
  }

  const Redactor redactor;
  auto trace = load_trace(back_path);
  if (!(trace.header == read_header)) {
    std::fprintf(stderr, "the header changed:\n%s\n%s\n", header_line(read_header).c_str(),
                 header_line(trace.header).c_str());
    std::abort();
  }
  if (trace.exchanges.size() != exchanges.size()) {
    std::fprintf(stderr, "%zu exchanges exported, %zu imported\n", exchanges.size(), trace.exchanges.size());
    std::abort();
  }
  for (std::size_t i = 0; i < exchanges.size(); ++i) {
    Exchange expected = exchanges[i];
    redactor.apply(expected.request);
    redactor.apply(expected.response.headers);
    expected.error.message = utf8_or_replaced(expected.error.message);
    expected.decode_note = utf8_or_replaced(expected.decode_note);
    if (!(trace.exchanges[i] == expected)) {
      std::fprintf(stderr, "exchange %zu changed:\n%s\n%s\n", i, exchange_line(expected).c_str(),
                   exchange_line(trace.exchanges[i]).c_str());
      std::abort();
    }
  }
  std::filesystem::remove(back_path);
  return 0;
}
