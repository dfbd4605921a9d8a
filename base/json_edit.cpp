// A parsed request body written back after edits: see base/json_edit.hpp.
#include "base/json_edit.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>

namespace retrace {

namespace json = boost::json;

namespace {

// Where the top-level object of `body` closes (trailing whitespace skipped), or npos.
std::size_t closing_brace(std::string_view body) {
  std::size_t end = body.size();
  while (end > 0 && (body[end - 1] == ' ' || body[end - 1] == '\t' || body[end - 1] == '\n' ||
                     body[end - 1] == '\r')) {
    --end;
  }
  return end > 0 && body[end - 1] == '}' ? end - 1 : std::string_view::npos;
}

}  // namespace

JsonEdit set_member(json::object& object, std::string_view key, json::value value) {
  auto it = object.find(key);
  if (it == object.end()) {
    object[key] = std::move(value);
    return JsonEdit::added;
  }
  if (it->value() == value) return JsonEdit::none;
  it->value() = std::move(value);
  return JsonEdit::changed;
}

std::string write_edited(std::string_view original, const json::object& edited, std::size_t original_members,
                         JsonEdit edit) {
  if (edit == JsonEdit::none) return std::string(original);
  const std::size_t brace = closing_brace(original);
  if (edit == JsonEdit::changed || brace == std::string_view::npos || edited.size() < original_members)
    return json::serialize(edited);
  std::string out(original.substr(0, brace));
  // Members past the ones parsed are the added ones: insertion appends, and no erase happened
  // (an erase is a change).
  for (std::size_t i = original_members; i < edited.size(); ++i) {
    const auto& member = *(edited.begin() + static_cast<std::ptrdiff_t>(i));
    if (i > 0) out += ',';
    out += json::serialize(json::string(member.key()));
    out += ':';
    out += json::serialize(member.value());
  }
  out.append(original.substr(brace));
  return out;
}

}  // namespace retrace
