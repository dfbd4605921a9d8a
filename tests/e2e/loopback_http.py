"""The loop every Python test upstream of tests/e2e shares, and the reply they all write.

serve(Handler): binds 127.0.0.1 on the port given as the first argument (0 or none: any free
one), prints "listening on http://127.0.0.1:PORT" (what lib.sh's start_listening waits for) and
serves until killed, a thread a connection. reply(handler, ...): one whole HTTP/1.1 answer with its
Content-Length. lib.sh puts this folder on PYTHONPATH, so a script written into $WORK imports it too.
"""
import http.server
import socketserver
import sys


class ThreadingServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


class ThreadingHTTPServer(http.server.ThreadingHTTPServer):
    daemon_threads = True


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
