#include "record/sampling.hpp"

#include <xxhash.h>

#include <cmath>

#include <boost/json.hpp>

namespace retrace::record {

namespace json = boost::json;

SessionSampler::SessionSampler(double fraction, std::uint64_t seed)
    : seed_(seed), all_(fraction >= 1.0) {
  // 2^64 * fraction, without overflowing for a fraction just below 1.
  long double scaled = std::ldexp(static_cast<long double>(std::max(fraction, 0.0)), 64);
  threshold_ = all_ || scaled >= std::ldexp(1.0L, 64) ? ~std::uint64_t{0}
                                                        : static_cast<std::uint64_t>(scaled);
}

bool SessionSampler::keeps(std::string_view name) const {
  if (all_) return true;
  return XXH3_64bits_withSeed(name.data(), name.size(), seed_) < threshold_;
}

bool SessionSampler::keeps_request(std::string_view session, std::string_view method,
                                   std::string_view target, std::string_view body) const {
  if (all_) return true;
  if (!session.empty()) return keeps(session);
  auto message = first_user_message(body);
  if (!message.empty()) return keeps(message);
  std::string whole;
  whole.reserve(method.size() + target.size() + body.size() + 2);
  whole.append(method).append(1, ' ').append(target).append(1, '\n').append(body);
  return keeps(whole);
}

namespace {

// The content of the first element of `list` whose role is "user"; null when none.
const json::value* first_user_item(const json::value* list) {
  if (!list || !list->is_array()) return nullptr;
  for (const auto& item : list->get_array()) {
    const auto* object = item.if_object();
    if (!object) continue;
    const auto* role = object->if_contains("role");
    if (!role || !role->is_string() || role->get_string() != "user") continue;
    const auto* content = object->if_contains("content");
    return content ? content : &item;
  }
  return nullptr;
}

}  // namespace

std::string first_user_message(std::string_view body) {
  if (body.empty() || (body.front() != '{' && body.find('{') == std::string_view::npos)) return {};
  json::monotonic_resource arena;
  json::error_code ec;
  auto parsed = json::parse(body, ec, &arena);
  if (ec || !parsed.is_object()) return {};
  const auto& object = parsed.get_object();
  const json::value* found = first_user_item(object.if_contains("messages"));
  if (!found) {
    const auto* input = object.if_contains("input");
    found = input && input->is_string() ? input : first_user_item(input);
  }
  if (!found) found = object.if_contains("prompt");
  if (!found) return {};
  if (found->is_string()) return std::string(found->get_string());
  return json::serialize(*found);
}

}  // namespace retrace::record
