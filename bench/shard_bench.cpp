// Generates what bench/shards.sh measures: an N-exchange trace and the four shard runs of a
// closed-loop replay of it (as `retrace replay --shard i/4 --start-at T` writes them: settings with
// the shard facts, each shard's exchanges in completion order), so merge and stats can be timed at
// sizes no loopback replay reaches in a session.
//
//   shard_bench DIR EXCHANGES [TOKENS]
//   -> DIR/trace.rtrace  DIR/shard0.rtrace ... DIR/shard3.rtrace
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "format/trace.hpp"
#include "replay/replay.hpp"
#include "replay/shard.hpp"
#include "llm/derive_tokens.hpp"

using namespace retrace;

namespace {

constexpr std::size_t kShards = 4;

Exchange make_exchange(std::uint64_t id, std::size_t tokens) {
  Exchange exchange;
  exchange.id = id;
  exchange.request.method = "POST";
  exchange.request.target = "/v1/completions";
  exchange.request.body = "{\"model\":\"sim\",\"prompt\":\"question " + std::to_string(id) +
                          "\",\"max_tokens\":" + std::to_string(tokens) + ",\"stream\":true}";
  exchange.key = request_key(exchange.request.method, exchange.request.target, exchange.request.body);
  return exchange;
}

void add_response(Exchange& exchange, std::size_t tokens, std::int64_t send_ns) {
  exchange.intended_send_ns = exchange.actual_send_ns = send_ns;
  exchange.start_unix_ns = 1'796'119'200'000'000'000 + send_ns;
  exchange.response.status = 200;
  exchange.response.streamed = true;
  exchange.first_byte_ns = 20'000'000;
  exchange.end_ns = 20'000'000 + static_cast<std::int64_t>(tokens) * 10'000'000;
  Choice choice;
  choice.kind = TokenKind::text_deltas;
  for (std::size_t t = 0; t < tokens; ++t) {
    Token token;
    token.bytes = " word";
    token.offset_ns = 20'000'000 + static_cast<std::int64_t>(t) * 10'000'000;
    choice.tokens.push_back(std::move(token));
  }
  choice.finish_reason = "length";
  exchange.choices.push_back(std::move(choice));
  exchange.usage = {8, static_cast<std::int64_t>(tokens), 8 + static_cast<std::int64_t>(tokens)};
}

}  // namespace

int main(int argc, char** argv) {
  retrace::llm::install_token_deriver();  // format 1.7 (format/token_deriver.hpp)
  if (argc < 3) {
    std::fprintf(stderr, "usage: shard_bench DIR EXCHANGES [TOKENS]\n");
    return 2;
  }
  std::filesystem::path dir = argv[1];
  std::size_t count = std::strtoull(argv[2], nullptr, 10);
  std::size_t tokens = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 16;
  std::filesystem::create_directories(dir);

  // The input trace, and its identity as replay computes it (which wants it loaded: the
  // generator holds only the keys, as the identity needs nothing else).
  TraceHeader input_header;
  input_header.source = Source::imported;
  input_header.created_unix_ns = 1'796'119'000'000'000'000;
  LoadedTrace keys_only;
  keys_only.header = input_header;
  {
    TraceWriter writer(dir / "trace.rtrace", input_header);
    for (std::uint64_t id = 0; id < count; ++id) {
      auto exchange = make_exchange(id, tokens);
      writer.write(exchange);
      keys_only.exchanges.emplace_back().key = exchange.key;
    }
    writer.close();
  }
  auto identity = replay::input_identity(keys_only);
  keys_only.exchanges.clear();
  keys_only.exchanges.shrink_to_fit();

  for (std::size_t shard = 0; shard < kShards; ++shard) {
    replay::Options options;
    options.target = "http://127.0.0.1:8000";
    options.schedule.concurrency = 8;
    options.shard_index = shard;
    options.shard_count = kShards;
    replay::ShardFacts facts;
    facts.input_identity = identity;
    facts.selected = count / kShards + (shard < count % kShards ? 1 : 0);
    facts.host = "node" + std::to_string(shard);
    facts.start_at_ns = 1'796'119'200'000'000'000;
    facts.clock_offset_ns = 250'000 * static_cast<std::int64_t>(shard);
    TraceHeader header;
    header.source = Source::replayed;
    header.target = options.target;
    auto settings = replay::run_settings(options);
    replay::add_shard_facts(settings, facts);
    header.settings = metrics::to_json(settings);
    header.labels = {{"run", "shard" + std::to_string(shard)}, {"concurrency", "8"}};
    TraceWriter writer(dir / ("shard" + std::to_string(shard) + ".rtrace"), header);
    std::uint64_t next_id = 0;
    for (std::uint64_t source = shard; source < count; source += kShards) {
      auto exchange = make_exchange(next_id++, tokens);
      exchange.source_id = source;
      // 8 in flight per shard, each 170 ms: the k-th send at (k / 8) * 170 ms.
      add_response(exchange, tokens, static_cast<std::int64_t>((source / kShards) / 8) * 170'000'000);
      exchange.labels = header.labels;
      writer.write(exchange);
    }
    writer.close();
  }
  std::printf("wrote %zu exchanges and %zu shards into %s\n", count, kShards, dir.c_str());
  return 0;
}
