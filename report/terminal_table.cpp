#include "report/terminal_table.hpp"

#include <algorithm>
#include <vector>

#include "base/text.hpp"

namespace retrace::report {

namespace {

using Row = std::vector<std::string>;

bool is_table_line(std::string_view line) { return !line.empty() && line.front() == '|'; }

// "| a | b |" -> {"a", "b"}; cells trimmed. Markdown's escaped pipe (\|) stays in its cell.
Row cells_of(std::string_view line) {
  Row cells;
  std::string cell;
  for (std::size_t i = 1; i < line.size(); ++i) {
    if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '|') {
      cell += '|';
      ++i;
    } else if (line[i] == '|') {
      auto begin = cell.find_first_not_of(' ');
      auto end = cell.find_last_not_of(' ');
      cells.push_back(begin == std::string::npos ? "" : cell.substr(begin, end - begin + 1));
      cell.clear();
    } else {
      cell += line[i];
    }
  }
  return cells;
}

bool is_separator(const Row& row) {
  for (const auto& cell : row)
    if (cell.empty() || cell.find_first_not_of("-:") != std::string::npos) return false;
  return !row.empty();
}

std::string pad(const std::string& text, std::size_t width) {
  auto shown = utf8_width(text);
  return shown < width ? text + std::string(width - shown, ' ') : text;
}

std::string render_table(const std::vector<Row>& rows, std::size_t width) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows)
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (widths.size() <= i) widths.push_back(0);
      widths[i] = std::max(widths[i], utf8_width(row[i]));
    }
  std::size_t total = 0;
  for (auto w : widths) total += w + 2;
  std::string out;
  if (width == 0 || total <= width) {
    for (const auto& row : rows) {
      std::string line;
      for (std::size_t i = 0; i < row.size(); ++i)
        line += i + 1 < row.size() ? pad(row[i], widths[i] + 2) : row[i];
      out += line + "\n";
    }
    return out;
  }
  // Too wide: each data row as a block of "column: value" lines, the header's names as labels.
  const Row& names = rows.front();
  std::size_t label = 0;
  for (const auto& name : names) label = std::max(label, utf8_width(name));
  for (std::size_t r = 1; r < rows.size(); ++r) {
    for (std::size_t i = 0; i < rows[r].size(); ++i)
      out += (i == 0 ? "" : "  ") + pad(i < names.size() ? names[i] : "", label) + "  " + rows[r][i] + "\n";
    if (r + 1 < rows.size()) out += "\n";
  }
  return out;
}

}  // namespace


std::string markdown_for_terminal(std::string_view markdown, std::size_t width) {
  std::string out;
  std::vector<Row> table;
  auto flush = [&] {
    if (!table.empty()) out += render_table(table, width);
    table.clear();
  };
  while (!markdown.empty()) {
    auto end = markdown.find('\n');
    auto line = markdown.substr(0, end);
    markdown.remove_prefix(end == std::string_view::npos ? markdown.size() : end + 1);
    if (is_table_line(line)) {
      Row row = cells_of(line);
      if (!is_separator(row)) table.push_back(std::move(row));
      continue;
    }
    flush();
    out += std::string(line) + "\n";
  }
  flush();
  return out;
}

}  // namespace retrace::report
