// Request preparation and chains: see replay/prepare.hpp.
#include "replay/prepare.hpp"
#include "replay/secret_fill.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/core/buffers_range.hpp>
#include <boost/beast/http/span_body.hpp>
#include <boost/beast/http/fields.hpp>

#include "base/ascii.hpp"
#include "format/wire_syntax.hpp"
#include "base/json_fields.hpp"
#include "net/content_coding.hpp"
#include "net/http_rules.hpp"

namespace retrace::replay {

namespace http = boost::beast::http;

std::string wire_head(const PreparedRequest& prepared, std::string_view body) {
  // The body is only measured (a span of it, not a copy), and the head is Beast's own fields
  // writer's bytes, appended: what `ostream << request.base()` printed, without a stream and its
  // locale per request.
  http::request<http::span_body<const char>> request{prepared.verb, prepared.target, 11};
  if (prepared.headers)
    for (const auto& header : *prepared.headers) request.insert(header.name, header.value);
  request.keep_alive(true);
  request.body() = {body.data(), body.size()};
  if (!body.empty() || prepared.verb == http::verb::post) request.prepare_payload();
  http::fields::writer writer{request.base(), request.version(), request.method()};
  const auto buffers = writer.get();
  std::string head;
  head.reserve(boost::beast::buffer_bytes(buffers));
  for (auto buffer : boost::beast::buffers_range_ref(buffers))
    head.append(static_cast<const char*>(buffer.data()), buffer.size());
  return head;
}

std::string marked_as_probe(std::string_view head) {
  // The head ends with the empty line (CRLF CRLF); the field goes before it.
  auto end = head.size() >= 2 ? head.size() - 2 : head.size();
  std::string marked(head.substr(0, end));
  marked += net::kProbeHeader;
  marked += ": ";
  marked += net::kProbeHeaderValue;
  marked += "\r\n";
  marked += head.substr(end);
  return marked;
}

Preparer::Preparer(const Options& options, const Preflight& checked)
    : options_(options), checked_(checked) {
  for (const auto& header : options.headers) overridden_.insert(ascii_lower(header.name));
  if (options.api_key) overridden_.insert("authorization");
  edits_.model = checked.model;
  edits_.token_ids = checked.token_ids;
  edits_.stream = options.stream;
  edits_.set = options.set;
  edits_.unset = options.unset;
}

http::verb method_of(const Exchange& source) {
  auto verb = source.request.method.empty() ? http::verb::post : http::string_to_verb(source.request.method);
  if (verb == http::verb::unknown)
    throw std::invalid_argument("exchange " + std::to_string(source.id) + ": unknown method '" +
                                source.request.method + "'; use --filter to leave it out");
  return verb;
}

struct Preparer::Frame {
  // What it is made of: the recorded request's.
  std::string recorded_method, recorded_target;
  std::vector<HttpHeader> recorded_headers;
  bool has_body = false;
  // What it makes.
  PreparedRequest request;  // verb, method and target only
  // Each request's headers and recorded_headers point here (and keep the frame).
  std::vector<HttpHeader> sent_headers, redacted_headers;
  std::string target;       // the recorded target with its leading '/' (what prepare_body reads)
  std::string unsendable;   // wire_syntax_error's
  // The wire head of a body of N bytes is this and "Content-Length: N\r\n\r\n" (for a body,
  // or a POST); nullopt when that does not hold, and each send's head is built whole.
  std::optional<std::string> head_prefix;

  bool made_of(const Exchange& source) const {
    return has_body == !source.request.body.empty() && recorded_method == source.request.method &&
           recorded_target == source.request.target && recorded_headers == source.request.headers;
  }
};

namespace {

std::string content_length_tail(std::size_t size) {
  return "Content-Length: " + std::to_string(size) + "\r\n\r\n";
}

// The head without its "Content-Length: N" line and the empty line, when it ends with them: Beast
// writes Content-Length after every other field (prepare_payload sets it last) and nothing else in
// the head depends on the body's size, so the rest is every body's. Otherwise (no such ending)
// nullopt, and each send builds its head whole.
std::optional<std::string> prefix_of(const std::string& head, std::size_t body_size) {
  auto tail = content_length_tail(body_size);
  if (!head.ends_with(tail)) return std::nullopt;
  return head.substr(0, head.size() - tail.size());
}

}  // namespace

std::uint64_t Preparer::frame_hash(const Exchange& source) {
  std::uint64_t hash = source.request.body.empty();
  auto add = [&](std::string_view text) {
    hash = (hash ^ std::hash<std::string_view>{}(text)) * 0x100000001b3ull + text.size();
  };
  add(source.request.method);
  add(source.request.target);
  for (const auto& header : source.request.headers) {
    add(header.name);
    add(header.value);
  }
  return hash;
}

std::shared_ptr<Preparer::Frame> Preparer::make_frame(const Exchange& source, bool kept) const {
  const auto& options = options_;
  const net::Url& url = checked_.url;
  auto frame = std::make_shared<Frame>();
  frame->has_body = !source.request.body.empty();
  if (kept) {  // what made_of compares the next requests with
    frame->recorded_method = source.request.method;
    frame->recorded_target = source.request.target;
    frame->recorded_headers = source.request.headers;
  }
  PreparedRequest& p = frame->request;
  auto& headers = frame->sent_headers;
  p.verb = method_of(source);
  p.method = source.request.method.empty() ? "POST" : source.request.method;
  frame->target = source.request.target.empty() ? std::string("/") : source.request.target;
  if (frame->target.front() != '/') frame->target.insert(frame->target.begin(), '/');
  p.target = url.join(frame->target);
  headers.push_back({"Host", url.host_header()});
  std::string_view connection;
  for (const auto& header : source.request.headers)
    if (boost::beast::iequals(header.name, "connection")) connection = header.value;
  net::HopByHop hop_by_hop(connection);
  for (const auto& header : source.request.headers) {
    auto name = ascii_lower(header.name);
    // Recorded secrets are redacted: resending "[redacted]" would only fail; --api-key-env or
    // --header supplies real ones.
    if (hop_by_hop(name) || is_secret_header(name) || overridden_.count(name)) continue;
    // Compression as the recorded client asked for it (it changes what the server does and
    // when bytes arrive), limited to the codings replay decodes; none when it asked for none.
    if (name == "accept-encoding") {
      auto codings = net::decodable_accept_encoding(header.value);
      if (!codings.empty()) headers.push_back({header.name, std::move(codings)});
      continue;
    }
    headers.push_back(header);
  }
  for (const auto& header : options.headers) headers.push_back(header);
  if (options.api_key) headers.push_back({"Authorization", "Bearer " + *options.api_key});
  bool has_type = std::any_of(headers.begin(), headers.end(), [](const HttpHeader& h) {
    return boost::beast::iequals(h.name, "content-type");
  });
  if (!has_type && frame->has_body) headers.push_back({"Content-Type", "application/json"});
  // Checked at trace read too; again here, where the bytes are chosen, for every other way in
  // (a --header, a base path).
  frame->unsendable = wire_syntax_error(p.method, p.target, headers);
  frame->redacted_headers = headers;
  Redactor().apply(frame->redacted_headers);
  return frame;
}

std::shared_ptr<const PreparedRequest> Preparer::operator()(const Exchange& source) const {
  // The last request's frame when this one's is the same. Else a new one, kept for the next
  // requests (once this one's head has given it its prefix) when the request before had the same
  // frame hash too: a trace whose every request has headers of its own (x-request-id) does not
  // pay for keeping frames that are never used again (bench/RESULTS.md, cut 4).
  std::shared_ptr<const Frame> frame;
  bool keep = false;
  {
    auto hash = frame_hash(source);
    std::lock_guard lock(mutex_);
    if (last_ && last_->made_of(source)) frame = last_;
    keep = hash == last_hash_;
    last_hash_ = hash;
  }
  std::shared_ptr<Frame> made;
  if (!frame) {
    made = make_frame(source, keep);
    frame = made;
  }
  const auto& f = frame->request;
  PreparedRequest p;
  p.verb = f.verb;
  p.method = f.method;
  p.target = f.target;
  SentBody body;
  try {
    body = prepare_body(p.method, frame->target, p.target, source.request.body, edits_);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("exchange " + std::to_string(source.id) + " (" +
                                source.request.target + "): " + e.what());
  }
  if (!frame->unsendable.empty())
    throw std::invalid_argument("exchange " + std::to_string(source.id) +
                                ": its request cannot go on the wire: " + frame->unsendable +
                                "; use --filter to leave it out");
  p.headers = std::shared_ptr<const std::vector<HttpHeader>>(frame, &frame->sent_headers);
  p.recorded_headers = std::shared_ptr<const std::vector<HttpHeader>>(frame, &frame->redacted_headers);
  p.body = std::move(body.bytes);
  p.key = body.key;
  p.secret_body = fill_secrets(p.body, options_.secret_fills);
  p.sends_redacted = sends_redaction_marker(p.target, p.secret_body ? *p.secret_body : p.body);
  const std::string& sent = p.secret_body ? *p.secret_body : p.body;
  const bool sized = !sent.empty() || p.verb == http::verb::post;  // wire_head's Content-Length
  if (frame->head_prefix && sized) {
    auto tail = content_length_tail(sent.size());
    p.head.reserve(frame->head_prefix->size() + tail.size());
    p.head = *frame->head_prefix;
    p.head += tail;
  } else {
    try {
      p.head = wire_head(p, sent);
    } catch (const std::exception&) {
      // Left empty: each send builds it again, and the exchange records why it cannot be sent
      // (Beast refuses a header value over 64 KiB, a TRACE with a body).
    }
    if (made && keep && sized && !p.head.empty()) made->head_prefix = prefix_of(p.head, sent.size());
  }
  if (made && keep) {
    std::lock_guard lock(mutex_);
    last_ = std::move(made);
  }
  p.source_id = source.id;
  p.session_id = source.session_id;
  p.labels = source.labels;
  p.expected = source.expected;
  return std::make_shared<const PreparedRequest>(std::move(p));
}

std::vector<Prepared> prepare_requests(const LoadedTrace& input, const std::vector<std::size_t>& chosen,
                                       const Options& options, const Preflight& checked) {
  Preparer prepare(options, checked);
  std::vector<Prepared> prepared;
  prepared.reserve(chosen.size());
  std::vector<std::size_t> copies(input.exchanges.size());  // how often each input was prepared
  std::vector<std::shared_ptr<const PreparedRequest>> first(input.exchanges.size());
  for (auto index : chosen) {
    auto cycle = copies[index]++;
    // A copy shares the first: preparation depends on the input exchange and the options only.
    if (cycle == 0) first[index] = prepare(input.exchanges[index]);
    prepared.push_back({index, cycle, first[index]});
  }
  return prepared;
}

std::vector<Chain> make_chains(const LoadedTrace& input, const std::vector<Prepared>& prepared,
                               const Options& options) {
  return make_chains(candidates_of(input.exchanges, options), prepared, options);
}

std::vector<Chain> make_chains(const std::vector<Candidate>& input, const std::vector<Prepared>& prepared,
                               const Options& options, const LeftOut* left_out) {
  std::vector<Chain> chains;
  bool sessions = options.sessions || options.live_sessions;
  std::unordered_map<std::string, std::size_t> chain_of_session;
  for (std::size_t i = 0; i < prepared.size(); ++i) {
    auto session = input[prepared[i].input_index].session;
    if (sessions && !session.empty()) {
      auto key = std::string(session);
      if (prepared[i].cycle > 0) key += "\n" + std::to_string(prepared[i].cycle);
      auto [it, inserted] = chain_of_session.try_emplace(key, chains.size());
      if (inserted) chains.emplace_back();
      chains[it->second].items.push_back(i);
    } else {
      chains.emplace_back().items.push_back(i);
    }
  }
  const auto& schedule = options.schedule;
  if (schedule.kind == ScheduleKind::rate) {
    // The arrival process of the whole trace: shard I of N holds chains I, I + N, I + 2N, ... of
    // the unsharded run (select_exchanges numbers exchanges, or sessions, densely and keeps every
    // N-th), so each gets the arrival time it has there.
    std::size_t stride = options.shard_count, first = options.shard_index;
    std::size_t needed = chains.empty() ? 0 : first + (chains.size() - 1) * stride + 1;
    auto offsets = arrival_offsets_ns(needed, schedule, options.seed);
    for (std::size_t c = 0; c < chains.size(); ++c) chains[c].start_ns = offsets[first + c * stride];
  } else if (schedule.kind == ScheduleKind::recorded) {
    // The trace's own clock, relative to the window's start, else to the earliest chosen send;
    // for a shard, to the earliest of the whole selection, and idle gaps capped over the whole
    // selection too, so that every shard keeps the unsharded run's times.
    auto clock = trace_clock_ns(input, left_out ? &left_out->clock : nullptr);
    std::vector<std::size_t> reference;
    if (options.shard_count > 1) {
      Options whole = options;
      whole.shard_count = 1;
      whole.shard_index = 0;
      whole.limit.reset();
      reference = select_candidates(input, whole, options.sessions || options.live_sessions, left_out);
    } else {
      for (const auto& p : prepared) reference.push_back(p.input_index);
    }
    std::int64_t first = std::numeric_limits<std::int64_t>::max();
    for (auto index : reference) first = std::min(first, clock[index]);
    if (options.window_from) first = options.window_from->count();  // the schedule starts there
    double speed = schedule.speed > 0 ? schedule.speed : 1;
    std::vector<std::int64_t> offsets;
    offsets.reserve(prepared.size());
    for (const auto& chain : chains)
      for (auto item : chain.items)
        offsets.push_back(static_cast<std::int64_t>(
            static_cast<double>(clock[prepared[item].input_index] - first) / speed));
    if (options.max_idle_gap) {
      // Capped together with the reference selection's offsets, of which these are a subset: a
      // shard's gaps are the whole run's gaps.
      auto own = offsets.size();
      for (auto index : reference)
        offsets.push_back(static_cast<std::int64_t>(static_cast<double>(clock[index] - first) / speed));
      cap_idle_gaps(offsets, options.max_idle_gap->count());
      offsets.resize(own);
    }
    std::size_t next = 0;
    for (auto& chain : chains) {
      for (std::size_t k = 0; k < chain.items.size(); ++k) chain.offsets_ns.push_back(offsets[next++]);
      chain.start_ns = chain.offsets_ns.front();
    }
    std::stable_sort(chains.begin(), chains.end(),
                     [](const Chain& a, const Chain& b) { return a.start_ns < b.start_ns; });
  }
  return chains;
}

void check_schedule(const LoadedTrace& input, const Options& options) {
  auto chosen = select_exchanges(input.exchanges, options, options.sessions || options.live_sessions);
  std::vector<Prepared> placeholders(chosen.size());
  for (std::size_t i = 0; i < chosen.size(); ++i) placeholders[i].input_index = chosen[i];
  make_chains(input, placeholders, options);
}

}  // namespace retrace::replay
