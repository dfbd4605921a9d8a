// Exchanges made field by field for the replay tests.
#pragma once

#include <cstdint>
#include <string>

#include "format/trace.hpp"

namespace retrace {

// A POST to `target` with id `id`, in `session` when one is given.
inline Exchange exchange_at(std::uint64_t id, std::string target, std::string session = {}) {
  Exchange e;
  e.id = id;
  e.request.method = "POST";
  e.request.target = std::move(target);
  e.session_id = std::move(session);
  return e;
}

}  // namespace retrace
