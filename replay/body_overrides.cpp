// --set/--unset on a request body (replay/replay.hpp, apply_body_overrides): dotted paths walked
// through objects and arrays.
#include <boost/json.hpp>
#include <charconv>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/json_edit.hpp"
#include "replay/body_path.hpp"
#include "replay/request_body.hpp"
#include "replay/replay.hpp"

namespace retrace::replay {
namespace json = boost::json;

std::optional<std::size_t> parse_index(std::string_view segment) {
  if (segment.empty() || segment.size() > 9) return std::nullopt;
  std::size_t value = 0;
  auto [ptr, ec] = std::from_chars(segment.data(), segment.data() + segment.size(), value);
  if (ec != std::errc() || ptr != segment.data() + segment.size()) return std::nullopt;
  return value;
}

namespace {

std::vector<std::string_view> split_path(std::string_view path) {
  std::vector<std::string_view> segments;
  std::size_t start = 0;
  while (true) {
    auto dot = path.find('.', start);
    segments.push_back(path.substr(start, dot == std::string_view::npos ? path.npos : dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  for (auto segment : segments)
    if (segment.empty())
      throw std::invalid_argument("body path '" + std::string(path) +
                                  "' has an empty segment; write it as a.b.c");
  return segments;
}

// Walks to the parent of the last segment; creates objects when `create`. nullptr: absent.
json::value* walk_to_parent(json::value& root, const std::vector<std::string_view>& segments,
                            std::string_view path, bool create) {
  json::value* node = &root;
  for (std::size_t i = 0; i + 1 < segments.size(); ++i) {
    auto segment = segments[i];
    if (auto* object = node->if_object()) {
      auto it = object->find(segment);
      if (it == object->end()) {
        if (!create) return nullptr;
        node = &(*object)[segment];
        *node = json::object();
      } else {
        node = &it->value();
        if (create && node->is_null()) *node = json::object();
      }
    } else if (auto* array = node->if_array()) {
      auto index = parse_index(segment);
      if (!index)
        throw std::invalid_argument("body path '" + std::string(path) + "': '" +
                                    std::string(segment) + "' indexes an array; use a number");
      if (*index >= array->size()) {
        if (!create) return nullptr;
        throw std::invalid_argument("body path '" + std::string(path) + "': index " +
                                    std::string(segment) + " is past the array's end (size " +
                                    std::to_string(array->size()) + ")");
      }
      node = &(*array)[*index];
    } else {
      if (!create) return nullptr;
      throw std::invalid_argument("body path '" + std::string(path) + "' runs through '" +
                                  std::string(segment) + "', which is not an object or array");
    }
  }
  return node;
}

}  // namespace

JsonEdit apply_body_overrides(json::value& body, const std::vector<std::pair<std::string, std::string>>& set,
                              const std::vector<std::string>& unset) {
  if (set.empty() && unset.empty()) return JsonEdit::none;
  if (!body.is_object())
    throw std::invalid_argument("the request body is not a JSON object, so --set/--unset cannot "
                                "apply; use --filter to leave such requests out");
  JsonEdit edit = JsonEdit::none;
  for (const auto& path : unset) {
    auto segments = split_path(path);
    auto* parent = walk_to_parent(body, segments, path, false);
    if (!parent) continue;
    if (auto* object = parent->if_object()) {
      if (object->erase(segments.back())) edit |= JsonEdit::changed;
    } else if (auto* array = parent->if_array()) {
      auto index = parse_index(segments.back());
      if (index && *index < array->size()) {
        array->erase(array->begin() + *index);
        edit |= JsonEdit::changed;
      }
    }
  }
  for (const auto& [path, text] : set) {
    auto segments = split_path(path);
    // A path under a top-level member the body did not have adds that member; any other changes it.
    const JsonEdit kind = body.as_object().contains(segments.front()) ? JsonEdit::changed : JsonEdit::added;
    auto* parent = walk_to_parent(body, segments, path, true);
    json::error_code value_ec;
    json::value value = json::parse(text, value_ec);
    if (value_ec) value = json::string(text);
    if (auto* object = parent->if_object()) {
      if (segments.size() == 1) {
        edit |= set_member(*object, segments.back(), std::move(value));
      } else {
        (*object)[segments.back()] = std::move(value);
        edit |= kind;
      }
    } else if (auto* array = parent->if_array()) {
      auto index = parse_index(segments.back());
      if (!index || *index > array->size())
        throw std::invalid_argument("body path '" + path + "': '" +
                                    std::string(segments.back()) + "' is not an index of the array");
      if (*index == array->size()) array->push_back(std::move(value));
      else (*array)[*index] = std::move(value);
      edit |= JsonEdit::changed;
    } else {
      throw std::invalid_argument("body path '" + path + "': its parent is not an object");
    }
  }
  return edit;
}

std::string apply_body_overrides(std::string_view body,
                                 const std::vector<std::pair<std::string, std::string>>& set,
                                 const std::vector<std::string>& unset) {
  if (set.empty() && unset.empty()) return std::string(body);
  json::error_code ec;
  json::value root = json::parse(body, ec);
  if (ec) root = nullptr;  // refused below, as any body that is not an object
  const std::size_t members = root.is_object() ? root.get_object().size() : 0;
  const JsonEdit edit = apply_body_overrides(root, set, unset);
  return write_edited(body, root.get_object(), members, edit);
}

}  // namespace retrace::replay
