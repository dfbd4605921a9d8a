// The least a client spends receiving streamed answers (issue 44's roofline of replay's streamed
// client): the requests replay sent, sent again on -c keep-alive HTTP/1.1 connections by one
// thread with plain sockets and a level-triggered epoll; each readiness gets ONE read into one
// reused buffer, stamped with clock_gettime (what any client that times each event's arrival
// must do), framed (bench/stream_framing.hpp: chunked or Content-Length, SSE events counted) and
// dropped. Nothing is parsed, decoded or kept. Its user + system CPU a token, under the same
// server and load as replay, is the floor of receiving a stream that a vLLM-style server sends an
// event a write; bench/client_roofline.sh runs it beside replay and the Python peer.
//
// Usage: stream_floor_bench URL REQUESTS.jsonl [-c N] [--buffer BYTES] [--no-timestamp]
//                           [--read-again] [--timeout SECONDS]
//        stream_floor_bench --self-test
// REQUESTS.jsonl: one {"method", "target", "body"} a line (body a string), e.g.
//   retrace export run.rtrace | jq -c '.exchange | select(.) | .request | {method, target, body}'
// Prints one JSON line: requests, completed, errors, tokens, events, done, reads (empty_reads of
// them came back EAGAIN), epoll_waits, writes, bytes, wall_s. Exit 0 when every request got a 200 that framed right, 1 otherwise.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/json/parse.hpp>

#include "bench/stream_framing.hpp"

using retrace::bench::ResponseFramer;
using retrace::bench::StreamCounts;

namespace {

struct Options {
  std::string host = "127.0.0.1";
  int port = 0;
  std::string requests_file;
  int connections = 64;
  std::size_t buffer = 65536;
  bool timestamp = true;
  bool read_again = false;
  double timeout_s = 600;
};

struct Connection {
  int fd = -1;
  ResponseFramer framer;
  const std::string* request = nullptr;  // being sent; points into the requests (outlive the run)
  std::size_t sent = 0;
  bool busy = false;
  std::int64_t last_arrival_ns = 0;  // the one stamp kept: the latest read's
};

struct Totals {
  StreamCounts counts;
  std::uint64_t completed = 0, errors = 0, reads = 0, empty_reads = 0, epoll_waits = 0, writes = 0, bytes = 0;
};

std::int64_t now_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "stream_floor_bench: %s\n", what.c_str());
  std::exit(2);
}

// The raw HTTP/1.1 request of each line of FILE.
std::vector<std::string> load_requests(const Options& options) {
  std::ifstream in(options.requests_file);
  if (!in) die("cannot read " + options.requests_file + ": " + std::strerror(errno));
  std::vector<std::string> requests;
  std::string line;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    boost::json::error_code ec;
    auto value = boost::json::parse(line, ec);
    const auto* object = ec ? nullptr : value.if_object();
    const auto* method = object ? object->if_contains("method") : nullptr;
    const auto* target = object ? object->if_contains("target") : nullptr;
    const auto* body = object ? object->if_contains("body") : nullptr;
    if (!method || !method->is_string() || !target || !target->is_string() || !body || !body->is_string()) {
      die(options.requests_file + ":" + std::to_string(number) +
          ": not a {\"method\", \"target\", \"body\"} object of strings (make the file with `retrace "
          "export RUN.rtrace | jq -c '.exchange | select(.) | .request | {method, target, body}'`)");
    }
    const auto& text = body->get_string();
    std::string request;
    request.append(method->get_string()).append(" ").append(target->get_string());
    request.append(" HTTP/1.1\r\nHost: ").append(options.host).append(":").append(std::to_string(options.port));
    request.append("\r\nContent-Type: application/json\r\nContent-Length: ").append(std::to_string(text.size()));
    request.append("\r\n\r\n").append(text.data(), text.size());
    requests.push_back(std::move(request));
  }
  if (requests.empty()) die(options.requests_file + " holds no request");
  return requests;
}

int connect_to(const Options& options) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) die(std::string("socket: ") + std::strerror(errno));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(options.port));
  if (::inet_pton(AF_INET, options.host.c_str(), &address.sin_addr) != 1) die("not an IPv4 address: " + options.host);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    die("connect to " + options.host + ":" + std::to_string(options.port) + ": " + std::strerror(errno));
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

// The rest of the connection's request, in as many writes as the socket takes now; EPOLLOUT is
// asked for only while some is left.
bool send_some(int epoll_fd, Connection& connection, Totals& totals) {
  const std::string& request = *connection.request;
  while (connection.sent < request.size()) {
    ssize_t n = ::write(connection.fd, request.data() + connection.sent, request.size() - connection.sent);
    ++totals.writes;
    if (n > 0) {
      connection.sent += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      epoll_event event{EPOLLIN | EPOLLOUT, {.ptr = &connection}};
      ::epoll_ctl(epoll_fd, EPOLL_CTL_MOD, connection.fd, &event);
      return true;
    }
    return false;
  }
  return true;
}

// False when the request could not be sent (counted as an error; the connection rests).
bool start_request(int epoll_fd, Connection& connection, const std::string& request, Totals& totals) {
  connection.request = &request;
  connection.sent = 0;
  connection.busy = true;
  connection.framer.reset();
  if (send_some(epoll_fd, connection, totals)) return true;
  ++totals.errors;
  connection.busy = false;
  return false;
}

Options parse_options(int argc, char** argv) {
  Options options;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) die(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "-c") {
      options.connections = std::atoi(value().c_str());
    } else if (arg == "--buffer") {
      options.buffer = static_cast<std::size_t>(std::atol(value().c_str()));
    } else if (arg == "--read-again") {
      options.read_again = true;
    } else if (arg == "--no-timestamp") {
      options.timestamp = false;
    } else if (arg == "--timeout") {
      options.timeout_s = std::atof(value().c_str());
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.size() != 2) {
    die("usage: stream_floor_bench URL REQUESTS.jsonl [-c N] [--buffer BYTES] [--no-timestamp] "
        "[--read-again] [--timeout SECONDS] | --self-test");
  }
  std::string url = positional[0];
  if (url.rfind("http://", 0) == 0) url = url.substr(7);
  while (!url.empty() && url.back() == '/') url.pop_back();
  auto colon = url.rfind(':');
  if (colon == std::string::npos) die("no port in the URL " + positional[0] + " (try http://127.0.0.1:PORT)");
  options.host = url.substr(0, colon);
  options.port = std::atoi(url.c_str() + colon + 1);
  options.requests_file = positional[1];
  if (options.connections < 1 || options.connections > 4096) die("-c wants 1 to 4096 connections");
  if (options.buffer < 64 || options.buffer > (64u << 20)) die("--buffer wants 64 bytes to 64 MiB");
  if (options.port <= 0 || options.port > 65535) die("a bad port in the URL " + positional[0]);
  return options;
}

int self_test();

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--self-test") return self_test();
  const Options options = parse_options(argc, argv);
  const std::vector<std::string> requests = load_requests(options);
  const std::int64_t started = now_ns();
  const std::int64_t deadline = started + static_cast<std::int64_t>(options.timeout_s * 1e9);

  int epoll_fd = ::epoll_create1(0);
  if (epoll_fd < 0) die(std::string("epoll_create1: ") + std::strerror(errno));
  const std::size_t count = std::min<std::size_t>(static_cast<std::size_t>(options.connections), requests.size());
  std::vector<Connection> connections(count);
  Totals totals;
  std::size_t next = 0, finished = 0;
  for (auto& connection : connections) {
    connection.fd = connect_to(options);
    epoll_event event{EPOLLIN, {.ptr = &connection}};
    ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, connection.fd, &event);
    if (!start_request(epoll_fd, connection, requests[next++], totals)) ++finished;
  }

  std::vector<char> buffer(options.buffer);
  std::vector<epoll_event> ready(count);
  // A response ends: count it, then the connection's next request (or it rests).
  auto finish = [&](Connection& connection, bool ok) {
    if (ok && connection.framer.status() == 200) {
      ++totals.completed;
    } else {
      ++totals.errors;
      if (totals.errors <= 5) {
        std::fprintf(stderr, "stream_floor_bench: a response failed (status %d): %s\n", connection.framer.status(),
                     connection.framer.failed() ? connection.framer.error().c_str() : "");
      }
    }
    const auto& counts = connection.framer.counts();
    totals.counts.events += counts.events;
    totals.counts.tokens += counts.tokens;
    totals.counts.done += counts.done;
    connection.busy = false;
    ++finished;
    if (!ok) {  // the connection is in an unknown state: a fresh one for the rest
      ::close(connection.fd);
      connection.fd = connect_to(options);
      epoll_event event{EPOLLIN, {.ptr = &connection}};
      ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, connection.fd, &event);
    }
    if (next < requests.size() && !start_request(epoll_fd, connection, requests[next++], totals)) ++finished;
  };

  // One read of the connection and what it holds framed; returns read()'s result.
  auto read_once = [&](Connection& connection) -> ssize_t {
    ssize_t got = ::read(connection.fd, buffer.data(), buffer.size());
    ++totals.reads;
    if (got < 0 && (errno == EAGAIN || errno == EINTR)) {
      ++totals.empty_reads;
      return got;
    }
    if (options.timestamp) connection.last_arrival_ns = now_ns();
    if (got <= 0) {  // closed or broken: a response under way failed; an idle connection is closed
      if (connection.busy) {
        finish(connection, false);
      } else {
        ::close(connection.fd);
        connection.fd = -1;
      }
      return got;
    }
    totals.bytes += static_cast<std::uint64_t>(got);
    if (!connection.busy) {  // bytes nobody asked for: an error, and the connection is closed
      ++totals.errors;
      std::fprintf(stderr, "stream_floor_bench: %zd bytes on a connection with no request\n", got);
      ::close(connection.fd);
      connection.fd = -1;
      return got;
    }
    std::size_t used = connection.framer.feed(buffer.data(), static_cast<std::size_t>(got));
    if (connection.framer.failed() || (connection.framer.complete() && used < static_cast<std::size_t>(got))) {
      finish(connection, false);  // broken framing, or bytes past the response
    } else if (connection.framer.complete()) {
      finish(connection, true);
    }
    return got;
  };

  while (finished < requests.size()) {
    if (now_ns() > deadline) {
      std::fprintf(stderr, "stream_floor_bench: timed out after %.0f s with %zu of %zu requests finished\n",
                   options.timeout_s, finished, requests.size());
      break;
    }
    int n = ::epoll_wait(epoll_fd, ready.data(), static_cast<int>(ready.size()), 1000);
    ++totals.epoll_waits;
    if (n < 0 && errno != EINTR) die(std::string("epoll_wait: ") + std::strerror(errno));
    for (int i = 0; i < n; ++i) {
      Connection& connection = *static_cast<Connection*>(ready[i].data.ptr);
      if ((ready[i].events & EPOLLOUT) && connection.busy && connection.sent < connection.request->size()) {
        if (!send_some(epoll_fd, connection, totals)) {
          finish(connection, false);
          continue;
        }
        if (connection.sent == connection.request->size()) {
          epoll_event event{EPOLLIN, {.ptr = &connection}};
          ::epoll_ctl(epoll_fd, EPOLL_CTL_MOD, connection.fd, &event);
        }
      }
      if (!(ready[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))) continue;
      // --read-again: after a read that got bytes, read once more at once, as Asio's next
      // async_read_some does before it waits (the wasted EAGAIN replay pays, measured alone).
      if (read_once(connection) > 0 && options.read_again && connection.busy) read_once(connection);
    }
  }
  const double wall = static_cast<double>(now_ns() - started) * 1e-9;
  std::int64_t latest = 0;
  for (auto& connection : connections) {
    latest = std::max(latest, connection.last_arrival_ns);
    if (connection.fd >= 0) ::close(connection.fd);
  }
  ::close(epoll_fd);
  std::printf("{\"requests\":%zu,\"completed\":%llu,\"errors\":%llu,\"tokens\":%llu,\"events\":%llu,\"done\":%llu,"
              "\"reads\":%llu,\"empty_reads\":%llu,\"epoll_waits\":%llu,\"writes\":%llu,\"bytes\":%llu,\"wall_s\":%.4f,"
              "\"timestamps\":%s,\"buffer\":%zu,\"last_arrival_s\":%.4f}\n",
              requests.size(), static_cast<unsigned long long>(totals.completed),
              static_cast<unsigned long long>(totals.errors), static_cast<unsigned long long>(totals.counts.tokens),
              static_cast<unsigned long long>(totals.counts.events), static_cast<unsigned long long>(totals.counts.done),
              static_cast<unsigned long long>(totals.reads), static_cast<unsigned long long>(totals.empty_reads),
              static_cast<unsigned long long>(totals.epoll_waits),
              static_cast<unsigned long long>(totals.writes), static_cast<unsigned long long>(totals.bytes), wall,
              options.timestamp ? "true" : "false", options.buffer,
              latest ? static_cast<double>(latest - started) * 1e-9 : 0.0);
  return totals.completed == requests.size() ? 0 : 1;
}

namespace {

// The framer on responses split at every byte boundary, fed a byte at a time, and two responses
// back to back in one piece; and refusing broken framing. Exit 0 and "ok" when all hold.
std::string chunk(const std::string& data, const char* size_format = "%zx", const std::string& extension = "") {
  char size[32];
  std::snprintf(size, sizeof size, size_format, data.size());
  return size + extension + "\r\n" + data + "\r\n";
}

int self_test() {
  const std::string token = "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"text\":\" the\",\"logprobs\":null}]}\n\n";
  const std::string chat = "data: {\"choices\":[{\"delta\":{\"content\":\"ok\"}}]}\n\n";
  const std::string role = "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n";
  const std::string usage = "data: {\"choices\":[],\"usage\":{\"completion_tokens\":5}}\n\n";
  const std::string done = "data: [DONE]\n\n";
  const std::string chunked = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
                              chunk(token) + chunk(token, "%zX", ";name=value") + chunk(token + chat) +
                              chunk(token.substr(0, 20)) + chunk(token.substr(20)) + chunk(role) + chunk(usage) +
                              chunk(done) + "0\r\nX-Trailer: 1\r\n\r\n";
  std::string body;
  for (int i = 0; i < 3; ++i) body += "data: {\"choices\":[{\"text\":\"x\"}]}\r\n\r\n";
  body += ": a comment\r\n\r\ndata: [DONE]\r\n\r\n";
  const std::string sized = "HTTP/1.1 200 OK\r\ncontent-length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  struct Case {
    const char* name;
    const std::string& bytes;
    StreamCounts want;
  };
  const Case cases[] = {{"chunked", chunked, {7, 5, 1}}, {"Content-Length", sized, {3, 3, 1}}};
  int failures = 0;
  auto check = [&](bool ok, const std::string& what) {
    if (!ok && ++failures <= 10) std::fprintf(stderr, "self-test: %s\n", what.c_str());
  };
  auto matches = [](const ResponseFramer& framer, const StreamCounts& want) {
    const auto& got = framer.counts();
    return framer.complete() && framer.status() == 200 && got.events == want.events && got.tokens == want.tokens &&
           got.done == want.done;
  };
  for (const auto& c : cases) {
    ResponseFramer framer;
    for (std::size_t split = 0; split <= c.bytes.size(); ++split) {
      framer.reset();
      std::size_t used = framer.feed(c.bytes.data(), split);
      used += framer.feed(c.bytes.data() + split, c.bytes.size() - split);
      check(used == c.bytes.size() && matches(framer, c.want),
            std::string(c.name) + " split at byte " + std::to_string(split) + ": " + framer.error());
    }
    framer.reset();
    std::size_t used = 0;
    for (char byte : c.bytes) used += framer.feed(&byte, 1);
    check(used == c.bytes.size() && matches(framer, c.want), std::string(c.name) + " a byte at a time");
  }
  const std::string both = chunked + sized;
  ResponseFramer framer;
  std::size_t used = framer.feed(both.data(), both.size());
  check(used == chunked.size() && matches(framer, cases[0].want), "the first of two responses in one piece");
  framer.reset();
  check(framer.feed(both.data() + used, both.size() - used) == sized.size() && matches(framer, cases[1].want),
        "the second of two responses in one piece");
  const std::string head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
  const std::string broken[] = {head + "zz\r\n", head + "5\r\nhelloXY", "HTTP/1.1 200 OK\r\nServer: x\r\n\r\nbody",
                                "SSH-2.0-OpenSSH\r\n\r\n", head + "1234567890abcdef0\r\n"};
  for (const auto& bytes : broken) {
    framer.reset();
    framer.feed(bytes.data(), bytes.size());
    check(framer.failed() && !framer.error().empty(), "refused: " + bytes.substr(0, 60));
  }
  if (failures) {
    std::fprintf(stderr, "self-test: %d checks failed\n", failures);
    return 1;
  }
  std::printf("ok\n");
  return 0;
}

}  // namespace
