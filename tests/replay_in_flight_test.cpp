// Tests for replay/in_flight.hpp: the requests in flight at each send and the most while each ran.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <vector>

#include "replay/in_flight.hpp"

using retrace::replay::InFlight;

TEST_CASE("in flight counts each send and the most while a request ran") {
  InFlight gauge;
  auto a = gauge.sent();  // 1
  auto b = gauge.sent();  // 2
  CHECK(a.count == 1);
  CHECK(b.count == 2);
  CHECK(gauge.ended(b) == 2);
  auto c = gauge.sent();  // 2 again (a, c)
  auto d = gauge.sent();  // 3
  CHECK(c.count == 2);
  CHECK(gauge.ended(d) == 3);
  CHECK(gauge.ended(c) == 3);
  CHECK(gauge.ended(a) == 3);  // a saw b, c and d
  CHECK(gauge.now() == 0);
  auto e = gauge.sent();
  CHECK(e.count == 1);
  CHECK(gauge.ended(e) == 1);  // later peaks do not reach back
}

TEST_CASE("in flight agrees with a direct count over ten thousand random sends and ends") {
  InFlight gauge;
  std::mt19937 random(7);
  struct Open {
    InFlight::Sent sent;
    int most;
  };
  std::vector<Open> open;
  int count = 0;
  for (int step = 0; step < 10000; ++step) {
    if (open.empty() || (random() % 3 != 0 && open.size() < 64)) {
      auto sent = gauge.sent();
      ++count;
      REQUIRE(sent.count == count);
      for (auto& other : open) other.most = std::max(other.most, count);
      open.push_back({sent, count});
    } else {
      auto at = random() % open.size();
      REQUIRE(gauge.ended(open[at].sent) == open[at].most);
      open.erase(open.begin() + static_cast<long>(at));
      --count;
    }
  }
}
