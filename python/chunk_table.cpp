// Trace.chunks(): one row per output token of every part of every choice (format/trace.hpp's
// Choice), with the arrival of the event that carried it, its id, text and logprob, and the margin
// to the next alternative (diff::margin_to_next, the rule diff's margins read alternatives by).
#include <unordered_set>

#include "diff/diff.hpp"
#include "python/tables.hpp"

namespace retrace::python {

py::object chunks_table(const std::filesystem::path& path, const std::vector<std::uint64_t>& ids,
                        Warnings& warnings) {
  NumberColumn<std::uint64_t> exchange_id;
  NumberColumn<std::uint32_t> choice, tool_call, position;
  CategoryColumn part, tool_name;
  NumberColumn<double> offset_us, logprob, margin;
  NullableColumn token_id;
  NumberColumn<std::uint32_t> alternatives;
  TextColumn text;
  {
    py::gil_scoped_release unlocked;
    const std::unordered_set<std::uint64_t> wanted(ids.begin(), ids.end());
    TraceReader reader(path);
    Exchange exchange;
    while (reader.next(exchange)) {
      if (!wanted.empty() && !wanted.contains(exchange.id)) continue;
      for (const Choice& output : exchange.choices) {
        std::uint32_t index = 0;
        for (const Token& token : output.tokens) {
          exchange_id.push(exchange.id);
          choice.push(output.index);
          part.push(to_string(output.part));
          tool_call.push(output.tool_call);
          if (output.part == Part::tool_call) tool_name.push(output.tool_name);
          else tool_name.push_absent();
          position.push(index++);
          offset_us.push(static_cast<double>(token.offset_ns) / 1e3);
          token_id.push(token.id >= 0 ? std::optional<std::int64_t>(token.id) : std::nullopt);
          text.push(token.bytes);
          logprob.push(token.has_logprob ? double(token.logprob) : kNaN);
          auto next = diff::margin_to_next(output, token);
          margin.push(next ? *next : kNaN);
          alternatives.push(token.top_count);
        }
      }
    }
    warnings.add(path, reader.recovery());
  }
  Table table;
  table.add("exchange_id", std::move(exchange_id.values));
  table.add("choice", std::move(choice.values));
  table.add("part", std::move(part));
  table.add("tool_call", std::move(tool_call.values));
  table.add("tool_name", std::move(tool_name));
  table.add("position", std::move(position.values));
  table.add("offset_us", std::move(offset_us.values));
  table.add("token_id", std::move(token_id));
  table.add("text", std::move(text));
  table.add("logprob", std::move(logprob.values));
  table.add("margin", std::move(margin.values));
  table.add("alternatives", std::move(alternatives.values));
  return table.frame();
}

}  // namespace retrace::python
