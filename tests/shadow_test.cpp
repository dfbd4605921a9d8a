// retrace shadow's parts that need no server: the statistics of its verdict, the headers a mirror
// sends, and the pairing of mirrored exchanges with their primary ones.
#include <catch2/catch.hpp>

#include "metrics/statistics.hpp"
#include "shadow/mirror.hpp"
#include "shadow/verdict.hpp"

using namespace retrace;

TEST_CASE("Wilson's interval matches the published values and stays inside 0 to 1") {
  // Newcombe (1998), table I: 81/263 -> 0.2553 to 0.3662; 0/10 -> 0 to 0.2775.
  auto a = metrics::wilson_interval(81, 263);
  REQUIRE(a);
  CHECK(a->low == Approx(0.2553).margin(1e-4));
  CHECK(a->high == Approx(0.3662).margin(1e-4));
  auto b = metrics::wilson_interval(0, 10);
  CHECK(b->low == 0);
  CHECK(b->high == Approx(0.2775).margin(1e-4));
  CHECK_FALSE(metrics::wilson_interval(0, 0));
}

TEST_CASE("Newcombe's interval for a difference of proportions matches the published example") {
  // Newcombe (1998), table II, example (a): 56/70 - 48/80 -> 0.0524 to 0.3339 (method 10).
  auto d = metrics::newcombe_difference(56, 70, 48, 80);
  REQUIRE(d);
  CHECK(d->estimate == Approx(0.2).margin(1e-9));
  CHECK(d->low == Approx(0.0524).margin(1e-4));
  CHECK(d->high == Approx(0.3339).margin(1e-4));
  // Equal rates: the interval holds 0.
  auto same = metrics::newcombe_difference(0, 50, 0, 50);
  CHECK(same->low < 0);
  CHECK(same->high > 0);
  CHECK_FALSE(metrics::newcombe_difference(1, 0, 1, 2));
}

TEST_CASE("A mirror is sent the client's headers without its credentials and with its own") {
  std::vector<HttpHeader> client{{"Authorization", "Bearer sk-client"}, {"Cookie", "s=1"},
                                 {"X-Api-Key", "k"}, {"Connection", "keep-alive, X-Hop"},
                                 {"X-Hop", "1"}, {"Host", "primary"}, {"Content-Type", "application/json"},
                                 {"X-Conversation", "c1"}};
  auto headers = shadow::mirror_headers(client, {{"Authorization", "Bearer sk-candidate"}});
  std::vector<HttpHeader> expected{{"Content-Type", "application/json"}, {"X-Conversation", "c1"},
                                   {"Authorization", "Bearer sk-candidate"}};
  CHECK(headers == expected);
}

namespace {
Exchange answered(std::string text) {
  Exchange exchange;
  exchange.request.method = "POST";
  Choice choice;
  for (char c : text) {
    Token token;
    token.bytes = std::string(1, c);
    token.offset_ns = 1000;
    choice.tokens.push_back(std::move(token));
  }
  exchange.choices.push_back(std::move(choice));
  return exchange;
}
}  // namespace

TEST_CASE("Pairs are compared whichever half arrives first and drops are counted per leg and reason") {
  shadow::Pairing pairing(true, diff::Options{});
  pairing.on_mirror(shadow::Leg::candidate, 1, answered("abd"));  // before its primary
  pairing.on_primary(1, answered("abc"));
  pairing.on_mirror(shadow::Leg::control, 1, answered("abc"));
  pairing.on_primary(2, answered("xyz"));
  pairing.on_mirror(shadow::Leg::candidate, 2, answered("xyz"));
  pairing.on_dropped(shadow::Leg::control, 2, shadow::DropReason::queue_full);
  pairing.on_primary(4, answered("w"));
  pairing.on_dropped(shadow::Leg::control, 4, shadow::DropReason::stopped);
  pairing.on_mirror(shadow::Leg::candidate, 4, answered("w"));
  auto failed = answered("");
  failed.error = {ErrorKind::reset, "reset"};
  pairing.on_primary(3, answered("q"));
  pairing.on_mirror(shadow::Leg::candidate, 3, failed);
  auto verdict = pairing.snapshot();
  const auto& control = verdict.legs[0];
  const auto& candidate = verdict.legs[1];
  CHECK(candidate.pairs == 3);
  CHECK(candidate.differing == 1);
  CHECK(candidate.first_divergence.at(2) == 1);  // the third token, bucket 2-3
  CHECK(candidate.errors == 1);
  CHECK(control.pairs == 1);
  CHECK(control.identical == 1);
  CHECK(control.dropped == 2);
  CHECK(control.dropped_queue_full == 1);
  CHECK(control.dropped_at_stop == 1);
  REQUIRE(verdict.excess);
  CHECK(verdict.excess->estimate == Approx(1.0 / 3).margin(1e-9));
}
