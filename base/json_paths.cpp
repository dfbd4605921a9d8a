#include "base/json_paths.hpp"

#include <algorithm>
#include <array>
#include <string>
#include <utility>

#include <boost/json/basic_parser_impl.hpp>

namespace retrace {

namespace {

namespace json = boost::json;

// The paths as a tree of keys from the root (node 0); a node ending a path has its slot.
struct Node {
  std::string_view name;
  std::vector<int> children;
  std::vector<int> slots_under;  // the slots of the paths through here (reset when it comes again)
  int slot = -1;
};

struct Handler {
  static constexpr std::size_t max_object_size = std::size_t(-1);
  static constexpr std::size_t max_array_size = std::size_t(-1);
  static constexpr std::size_t max_key_size = std::size_t(-1);
  static constexpr std::size_t max_string_size = std::size_t(-1);

  std::vector<Node> nodes;
  std::vector<JsonSlot> slots;
  std::array<int, 64> open{};  // the node of each open container (-1: not on any path)
  int depth = 0;
  int pending = -1;  // the node whose value comes next
  std::string key;   // a key given in parts

  void reset() {
    std::fill(slots.begin(), slots.end(), JsonSlot{});
    depth = 0;
    pending = -1;
    key.clear();
  }
  // The value that starts now: the node it is the value of (-1: none), whose paths start afresh
  // (the last of duplicate keys wins).
  int take() {
    int node = std::exchange(pending, -1);
    if (node >= 0)
      for (int slot : nodes[node].slots_under) slots[slot] = JsonSlot{};
    return node;
  }
  void value(JsonSlot slot) {
    int node = take();
    if (node >= 0 && nodes[node].slot >= 0) slots[nodes[node].slot] = slot;
  }
  void enter(int node) {
    ++depth;
    if (depth < static_cast<int>(open.size())) open[depth] = node;
  }
  int current() const { return depth < static_cast<int>(open.size()) ? open[depth] : -1; }

  bool on_document_begin(json::error_code&) { return true; }
  bool on_document_end(json::error_code&) { return true; }
  bool on_object_begin(json::error_code&) {
    int node = depth == 0 ? 0 : take();
    if (node > 0 && nodes[node].slot >= 0) slots[nodes[node].slot] = JsonSlot{JsonSlot::other};
    enter(node);
    return true;
  }
  bool on_object_end(std::size_t, json::error_code&) {
    --depth;
    return true;
  }
  bool on_array_begin(json::error_code&) {
    value(JsonSlot{JsonSlot::other});
    enter(-1);
    return true;
  }
  bool on_array_end(std::size_t, json::error_code&) {
    --depth;
    return true;
  }
  bool on_key_part(json::string_view part, std::size_t, json::error_code&) {
    key.append(part.data(), part.size());
    return true;
  }
  bool on_key(json::string_view last, std::size_t, json::error_code&) {
    std::string_view name(last.data(), last.size());
    if (!key.empty()) name = key.append(last.data(), last.size());
    pending = -1;
    if (int node = current(); node >= 0)
      for (int child : nodes[node].children)
        if (nodes[child].name == name) pending = child;
    key.clear();
    return true;
  }
  bool on_string_part(json::string_view, std::size_t, json::error_code&) { return true; }
  bool on_string(json::string_view, std::size_t, json::error_code&) {
    value(JsonSlot{JsonSlot::other});
    return true;
  }
  bool on_number_part(json::string_view, json::error_code&) { return true; }
  bool on_int64(std::int64_t number, json::string_view, json::error_code&) {
    value(JsonSlot{JsonSlot::int64, number});
    return true;
  }
  bool on_uint64(std::uint64_t number, json::string_view, json::error_code&) {
    value(JsonSlot{JsonSlot::uint64, 0, number});
    return true;
  }
  bool on_double(double number, json::string_view, json::error_code&) {
    value(JsonSlot{JsonSlot::real, 0, 0, number});
    return true;
  }
  bool on_bool(bool, json::error_code&) {
    value(JsonSlot{JsonSlot::other});
    return true;
  }
  bool on_null(json::error_code&) {
    value(JsonSlot{});
    return true;
  }
  bool on_comment_part(json::string_view, json::error_code&) { return true; }
  bool on_comment(json::string_view, json::error_code&) { return true; }
};

}  // namespace

struct JsonPaths::Impl {
  json::basic_parser<Handler> parser{json::parse_options{}};
};

JsonPaths::JsonPaths(std::initializer_list<std::initializer_list<std::string_view>> paths)
    : impl_(std::make_unique<Impl>()) {
  Handler& handler = impl_->parser.handler();
  handler.nodes.resize(1);
  int slot = 0;
  for (const auto& path : paths) {
    int node = 0;
    for (std::string_view name : path) {
      handler.nodes[node].slots_under.push_back(slot);
      int next = -1;
      for (int child : handler.nodes[node].children)
        if (handler.nodes[child].name == name) next = child;
      if (next < 0) {
        next = static_cast<int>(handler.nodes.size());
        handler.nodes.push_back(Node{name, {}, {}, -1});
        handler.nodes[node].children.push_back(next);
      }
      node = next;
    }
    handler.nodes[node].slots_under.push_back(slot);
    handler.nodes[node].slot = slot++;
  }
  handler.slots.resize(static_cast<std::size_t>(slot));
}

JsonPaths::~JsonPaths() = default;

bool JsonPaths::read(std::string_view text) {
  auto& parser = impl_->parser;
  parser.reset();
  parser.handler().reset();
  auto open = text.find('{');
  auto close = text.rfind('}');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return false;
  text = text.substr(open, close - open + 1);
  json::error_code ec;
  std::size_t used = parser.write_some(false, text.data(), text.size(), ec);
  if (!ec && used == text.size() && parser.done()) return true;
  parser.handler().reset();
  return false;
}

const JsonSlot& JsonPaths::operator[](std::size_t path) const { return impl_->parser.handler().slots[path]; }

}  // namespace retrace
