#!/usr/bin/env python3
"""A misbehaving upstream for the record fault tests (test-only tool, loopback only).

The path, or a `fault=` query parameter (so that the path can stay /v1/chat/completions and the
recorder decodes the stream as chat), picks the misbehaviour:
  /reset       SSE headers, two chat chunks, then a TCP reset (no terminating chunk)
  /stall       reads the request and never answers
  /stall-mid   SSE headers and one chunk, then silence
  /status/N    answers status N with a JSON error body
  /slow        one chat chunk every 50 ms for up to 30 s; logs when the proxy hangs up
  /slow?n=N    the same, N chunks, then [DONE] and the end of the body: a slow stream that ends well
  /big?n=N&framing=chunked|length|eof
               N bytes of a repeating pattern (`pattern(N)`), chunked in pieces of uneven sizes,
               with a Content-Length, or delimited by closing the connection; logs when the
               client side went away before the end
  /malformed   SSE chat stream whose second event is not JSON, then a good one and [DONE]
  /interim     a 100 Continue and a 103 Early Hints before the real response (below)
  /early-413   reads only the request header, answers 413 with a JSON body and closes, leaving
               the body unread (so the close is a reset), as servers with a body limit do
  /drop-next   a whole SSE chat stream, kept alive (no Connection: close); the next request on
               the same connection is read and answered by closing it, as llama.cpp's server
               does to every request after a streamed response
  /huge-header?n=N[&field=coding|trailer]
               a header field X-Big of N bytes (a Content-Encoding list; X-Big as a chunked
               body's trailer), past what an HTTP library's fields may hold
  /set-cookie  200 with a small JSON body, a Set-Cookie and an X-Api-Key header (secrets a
               trace redacts) and a harmless X-Request-Id, kept alive
  /vllm-error, /sglang-error
               a 200 SSE stream that fails after its first tokens, byte for byte as vLLM and SGLang
               write it (tests/data/vllm/chat-stream-error.sse, tests/data/sglang/chat-stream-error.sse:
               an error event, then [DONE]), one event a chunk, kept alive
  /truncated   a 200 SSE stream of two chunks whose body then ends cleanly (terminating chunk)
               without finish_reason or [DONE], as a proxy ends it when the engine behind dies
  /error-body-200
               200 with vLLM's {"object":"error",...} body (tests/data/vllm/chat-nonstream-error-v0.json)
  A request body holding "fault:NAME" (e.g. a prompt of an imported dataset) picks fault NAME as
  the fault= parameter does.
  HEAD on any path: 405 with a body, which a response to HEAD must not have
  anything else: 200 with a small JSON body naming the path and the request's header names
               (Content-Length)
Listens on the port given as the first argument (default: any free one), prints
"listening on http://127.0.0.1:PORT"; logs events to stderr.
"""
import json
import os
import re
import socket
import socketserver
import struct
import sys

from loopback_http import ThreadingServer, read_body, read_head, serve
import time


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def event(text: str) -> bytes:
    body = {"id": "x", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
    return ("data: " + json.dumps(body) + "\n\n").encode()


SSE_HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\nCache-Control: no-cache\r\n\r\n")


class Handler(socketserver.BaseRequestHandler):
    def read_request(self):
        read = read_head(self.request)
        if read is None:
            return None
        lines, rest = read
        if "/early-413" in lines[0]:
            body = b'{"error":{"message":"upstream says the body is too large","type":"test"}}'
            self.request.sendall(b"HTTP/1.1 413 Payload Too Large\r\nContent-Type: application/json\r\n"
                                 b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            log("answered 413 before reading the body; closing")
            self.request.close()
            return None
        body = read_body(self.request, lines, rest)
        if body is None:
            return None
        method, target = lines[0].split(" ")[:2]
        self.header_names = [line.partition(":")[0].strip().lower() for line in lines[1:]]
        self.body = body
        return method, target

    def handle(self):
        sock = self.request
        drop_next = False
        while True:
            request = self.read_request()
            if request is None:
                return
            method, path = request
            log(f"request {method} {path}")
            if drop_next:
                # A moment later, as a server whose idle timeout fires as the request arrives: by
                # then a client running several requests has put its other connections back in
                # its pool (each armed to drop its next request the same way).
                time.sleep(0.3)
                log(f"dropped {method} {path} on a kept-alive connection")
                return
            if method == "HEAD":
                body = b'{"error":"HEAD is not allowed"}'
                sock.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Type: application/json\r\n"
                             b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
                continue
            if path.endswith("/interim"):
                sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n"
                             b"HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n")
            if "fault=" in path:
                path = "/" + path.split("fault=", 1)[1].split("&")[0]
            elif (marked := re.search(rb"fault:([a-z0-9-]+)", self.body)):
                path = "/" + marked.group(1).decode()
            if path in SERVER_FAILURES:
                name, ends_well = SERVER_FAILURES[path]
                events = read_data(name).split(b"\n\n")
                sock.sendall(SSE_HEAD + b"".join(chunk(e + b"\n\n") for e in events if e) + b"0\r\n\r\n")
                log(f"{path}: sent {name} ({'ends with [DONE]' if ends_well else 'no [DONE]'})")
                continue
            if path.endswith("/error-body-200"):
                body = read_data("vllm/chat-nonstream-error-v0.json")
                sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
                continue
            if path.endswith("/reset"):
                sock.sendall(SSE_HEAD + chunk(event("Hel")) + chunk(event("lo")))
                time.sleep(0.2)
                # SO_LINGER 0: close() sends RST instead of FIN.
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                sock.close()
                return
            if path.endswith("/malformed"):
                sock.sendall(SSE_HEAD + chunk(event("Hel")) + chunk(b"data: {not json\n\n") +
                             chunk(event("lo")) + chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
                continue
            if path.endswith("/drop-next"):
                sock.sendall(SSE_HEAD + chunk(event("Hel")) + chunk(event("lo")) +
                             chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
                drop_next = True
                continue
            if path.endswith("/stall"):
                time.sleep(30)
                return
            if path.endswith("/stall-mid"):
                sock.sendall(SSE_HEAD + chunk(event("Hel")))
                time.sleep(30)
                return
            if "/status/" in path:
                status = int(path.rsplit("/", 1)[1])
                body = json.dumps({"error": {"message": f"upstream says {status}",
                                             "type": "test"}}).encode()
                sock.sendall(b"HTTP/1.1 %d Test\r\nContent-Type: application/json\r\n"
                             b"Content-Length: %d\r\n\r\n%s" % (status, len(body), body))
                continue
            if path.endswith("/slow") or "/slow?" in path:
                query = request[1].partition("?")[2]  # as sent: fault= above kept only the path
                params = dict(p.split("=", 1) for p in query.split("&") if "=" in p)
                limit = int(params.get("n", "0"))
                sock.sendall(SSE_HEAD)
                sent = 0
                try:
                    deadline = time.time() + 30
                    while time.time() < deadline and (limit == 0 or sent < limit):
                        sock.sendall(chunk(event("tok%d " % sent)))
                        sent += 1
                        time.sleep(0.05)
                    if limit:
                        sock.sendall(chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
                        continue
                except OSError as e:
                    log(f"proxy closed the upstream connection after {sent} events ({e.__class__.__name__})")
                return
            if path.startswith("/big"):
                if not send_big(sock, path.partition("?")[2]):
                    return
                continue
            if path.startswith("/huge-header"):
                # One header value past what an HTTP library's fields may hold (Beast: 65,533
                # bytes), or a Content-Encoding list as long, under record's 256 KiB header limit.
                query = request[1].partition("?")[2]
                params = dict(p.split("=", 1) for p in query.split("&") if "=" in p)
                n = int(params.get("n", "70000"))
                if params.get("field") == "coding":
                    field = b"Content-Encoding: " + b"br," * (n // 3)
                else:
                    field = b"X-Big: " + b"a" * n
                body = b'{"ok":true}'
                if params.get("field") == "trailer":
                    # The field as a chunked body's trailer: after the head, out of its limit.
                    sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                 b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n%s\r\n\r\n"
                                 % (len(body), body, field))
                    continue
                sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + field +
                             b"\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
                continue
            if path.endswith("/set-cookie"):
                body = b'{"ok":true}'
                sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             b"Set-Cookie: session=SECRET1\r\nX-Api-Key: SECRET2\r\n"
                             b"X-Request-Id: r1\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
                continue
            body = json.dumps({"ok": True, "path": path, "headers": self.header_names}).encode()
            sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n%s" % (len(body), body))


DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data")
# Streams that fail after the 200 header: fault path -> (file in tests/data, has [DONE]).
SERVER_FAILURES = {
    "/vllm-error": ("vllm/chat-stream-error.sse", True),
    "/sglang-error": ("sglang/chat-stream-error.sse", True),
    "/truncated": ("vllm/chat-stream-truncated.sse", False),
}


def read_data(name: str) -> bytes:
    with open(os.path.join(DATA, name), "rb") as f:
        return f.read()


def pattern(size: int) -> bytes:
    unit = bytes(range(33, 127))  # printable, and no multiple of any piece size below
    return (unit * (size // len(unit) + 1))[:size]


def send_big(sock, query: str) -> bool:
    """Answers /big; returns whether the connection may be kept alive."""
    params = dict(part.split("=", 1) for part in query.split("&") if "=" in part)
    body = pattern(int(params.get("n", "1000000")))
    framing = params.get("framing", "chunked")
    try:
        if framing == "length":
            sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                         b"Content-Length: %d\r\n\r\n" % len(body))
            sock.sendall(body)
            return True
        if framing == "eof":
            sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                         b"Connection: close\r\n\r\n" + body)
            return False
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n")
        sizes = [1, 700, 70000, 13, 4096, 250000]
        pos, i = 0, 0
        while pos < len(body):
            piece = body[pos:pos + sizes[i % len(sizes)]]
            sock.sendall(chunk(piece))
            pos, i = pos + len(piece), i + 1
        sock.sendall(b"0\r\n\r\n")
        return True
    except OSError as e:
        log(f"big response cut: {e.__class__.__name__}")
        return False


def log(text):
    # One write per line: print() from the handler threads writes a text and its newline
    # separately, so two lines could interleave into one and a test counting lines miss one.
    os.write(2, ("upstream: " + text + "\n").encode())


if __name__ == "__main__":
    serve(Handler, ThreadingServer)
