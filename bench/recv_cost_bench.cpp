// What a read costs the kernel on a loopback TCP socket, the figures behind net/drained_read.hpp:
// a recv that fails with EAGAIN (the speculative read Asio tries on a drained socket), and a
// 256-byte read of bytes already there with recv, recvmsg, and recvmsg with TCP_INQ's control
// message. CPU (user + system) a call, over ROUNDS rounds that alternate the four.
//
// Usage: recv_cost_bench [ROUNDS (default 40)]; pin it (taskset -c 1) on a shared machine.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace {

double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec + (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

enum Way { kFailedRecv, kRecv, kRecvmsg, kRecvmsgInq, kWays };
const char* const kNames[kWays] = {"recv on an empty socket (EAGAIN)", "recv of 256 B", "recvmsg of 256 B",
                                   "recvmsg of 256 B with TCP_INQ"};

long read_once(int socket, Way way, char* buffer, std::size_t size) {
  if (way == kFailedRecv || way == kRecv) return recv(socket, buffer, size, 0);
  iovec piece{buffer, size};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  msghdr message{};
  message.msg_iov = &piece;
  message.msg_iovlen = 1;
  if (way == kRecvmsgInq) {
    message.msg_control = control;
    message.msg_controllen = sizeof control;
  }
  return recvmsg(socket, &message, 0);
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 40;
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || listen(listener, 1) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    std::perror("recv_cost_bench: cannot listen on 127.0.0.1");
    return 1;
  }
  int client = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(client, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    std::perror("recv_cost_bench: cannot connect on 127.0.0.1");
    return 1;
  }
  int peer = accept(listener, nullptr, nullptr);
  fcntl(client, F_SETFL, O_NONBLOCK);
  fcntl(peer, F_SETFL, O_NONBLOCK);
  static char out[1 << 16], buffer[256];
  double spent[kWays] = {};
  long calls[kWays] = {};
  for (int round = 0; round < rounds; ++round)
    for (int way = 0; way < kWays; ++way) {
      int on = way == kRecvmsgInq;
      setsockopt(client, SOL_TCP, TCP_INQ, &on, sizeof on);
      if (way == kFailedRecv) {
        double start = cpu_seconds();
        for (int i = 0; i < 100'000; ++i) read_once(client, kFailedRecv, buffer, sizeof buffer);
        spent[way] += cpu_seconds() - start;
        calls[way] += 100'000;
        continue;
      }
      for (int i = 0; i < 8; ++i)
        if (write(peer, out, sizeof out) <= 0) break;  // the socket's buffers full: bounded
      double start = cpu_seconds();
      while (read_once(client, static_cast<Way>(way), buffer, sizeof buffer) > 0) ++calls[way];
      spent[way] += cpu_seconds() - start;
    }
  for (int way = 0; way < kWays; ++way)
    std::printf("%-34s %.3f us a call (%ld calls)\n", kNames[way], spent[way] * 1e6 / calls[way], calls[way]);
}
