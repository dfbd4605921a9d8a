// An exchange's server fields (format 1.6, trace.capnp's ServerSaid and ServerState) <->
// format/server_said.hpp. Written only when known, so an exchange without them costs nothing; an
// absent struct (a 1.5 record, or none written) reads as its defaults, not known.
#include "format/wire.hpp"

namespace retrace::detail {
namespace {

void fill_sample(wire::ServerSample::Builder out, const ServerSample& sample) {
  out.setScrapeNs(sample.scrape_ns);
  out.setRunning(sample.running);
  out.setWaiting(sample.waiting);
  out.setKvUsage(sample.kv_usage);
}

void read_sample(wire::ServerSample::Reader in, ServerSample& sample) {
  sample.scrape_ns = in.getScrapeNs();
  sample.running = in.getRunning();
  sample.waiting = in.getWaiting();
  sample.kv_usage = in.getKvUsage();
}

}  // namespace

void fill_server(wire::Exchange::Builder out, const ServerSaid& said, const ServerState& state) {
  if (said != ServerSaid{}) {
    auto server = out.initServer();
    server.setSource(kj::StringPtr(said.source.c_str(), said.source.size()));
    server.setQueueMs(said.queue_ms);
    server.setTtftMs(said.ttft_ms);
    server.setDecodeMs(said.decode_ms);
    server.setE2eMs(said.e2e_ms);
    server.setPromptComputed(said.prompt_computed);
    server.setCachedTokens(said.cached_tokens);
  }
  if (state != ServerState{}) {
    auto joined = out.initServerState();
    fill_sample(joined.initAtSend(), state.at_send);
    fill_sample(joined.initAtFirstToken(), state.at_first_token);
    fill_sample(joined.initAtEnd(), state.at_end);
    joined.setPreemptions(state.preemptions);
  }
}

void read_server(wire::Exchange::Reader in, ServerSaid& said, ServerState& state) {
  auto server = in.getServer();
  auto source = server.getSource();
  said.source.assign(source.begin(), source.size());
  said.queue_ms = server.getQueueMs();
  said.ttft_ms = server.getTtftMs();
  said.decode_ms = server.getDecodeMs();
  said.e2e_ms = server.getE2eMs();
  said.prompt_computed = server.getPromptComputed();
  said.cached_tokens = server.getCachedTokens();
  auto joined = in.getServerState();
  read_sample(joined.getAtSend(), state.at_send);
  read_sample(joined.getAtFirstToken(), state.at_first_token);
  read_sample(joined.getAtEnd(), state.at_end);
  state.preemptions = joined.getPreemptions();
}

}  // namespace retrace::detail
