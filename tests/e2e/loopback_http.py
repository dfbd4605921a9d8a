"""The loop every Python test upstream of tests/e2e shares, and the reply they all write.

serve(Handler): binds 127.0.0.1 on the port given as the first argument (0 or none: any free
one), prints "listening on http://127.0.0.1:PORT" (what lib.sh's start_listening waits for) and
serves until killed, a thread a connection. reply(handler, ...): one whole HTTP/1.1 answer with its
Content-Length. read_head(sock) and read_body(sock, lines, rest): one request read off a raw socket
by the upstreams that answer byte by byte (socketserver handlers). lib.sh puts this folder on PYTHONPATH, so a script written into $WORK imports it too.
"""
import http.server
import socketserver
import sys


# The listen backlog: socketserver's default is 5, so a client that opens more connections at
# once than the accept thread takes (shadow's mirror opens up to --mirror-concurrency, 64) had its
# surplus handshakes dropped by the kernel and its requests waiting 1, 3, 7, 15, 31 s for the
# retransmissions. 1024 is what inference servers listen with (uvicorn 2048, hyper 1024).
BACKLOG = 1024


class ThreadingServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = BACKLOG


class ThreadingHTTPServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = BACKLOG


def port_argument():
    return int(sys.argv[1]) if len(sys.argv) > 1 else 0


def serve(handler, server_class=ThreadingHTTPServer, port=None):
    with server_class(("127.0.0.1", port_argument() if port is None else port), handler) as server:
        print(f"listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
        server.serve_forever()


def reply(handler, status, content_type, data, headers=()):
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    for name, value in headers:
        handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)
    handler.wfile.flush()


def read_head(sock):
    """A request's head off `sock`: (its lines, the bytes read past it), or None when the peer closed."""
    data = b""
    while b"\r\n\r\n" not in data:
        more = sock.recv(65536)
        if not more:
            return None
        data += more
    head, _, rest = data.partition(b"\r\n\r\n")
    return head.decode("latin-1").split("\r\n"), rest


def read_body(sock, lines, rest):
    """The body its Content-Length announces (none: empty), or None when the peer closed first."""
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    while len(rest) < length:
        more = sock.recv(65536)
        if not more:
            return None
        rest += more
    return rest[:length]
