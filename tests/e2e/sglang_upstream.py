#!/usr/bin/env python3
"""An upstream shaped like SGLang as retrace's study meets it (test-only tool, loopback only): it
names itself the way SGLang does (/v1/models owned_by "sglang", /get_server_info with a version),
keeps a prefix cache of the prompts it has answered, empties it on POST /flush_cache, and reports
usage.prompt_tokens_details.cached_tokens from that cache, so a test can see whether a study's
cold runs really ran cold.

  GET  /v1/models            one model, owned_by sglang
  GET  /get_server_info      {"version": "0.4.0-test"}
  POST /flush_cache          empties the cache (answers 404 with --no-flush: the cache stays)
  POST /v1/chat/completions  the same answer for the same messages, streamed or not; a prompt
                             seen since the last flush reports all but one token cached
  GET  /flushes              how many times the cache was emptied, and the requests answered

Listens on the port given as the first argument (0: any free one), prints
"listening on http://127.0.0.1:PORT".
"""
import hashlib
import http.server
import json
import sys
import threading

from loopback_http import reply, serve

NO_FLUSH = "--no-flush" in sys.argv[2:]
WORDS = "the a sky light sea blue red wave code tip plot line winter house".split()
lock = threading.Lock()
cache = set()
counts = {"flushes": 0, "requests": 0}


def answer_words(key):
    digest = hashlib.sha256(key.encode()).digest()
    return [WORDS[b % len(WORDS)] for b in digest[:12]]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, status, body, content_type="application/json"):
        reply(self, status, content_type, body)

    def do_GET(self):
        if self.path == "/v1/models":
            body = {"object": "list", "data": [{"id": "sglang-test", "object": "model", "owned_by": "sglang"}]}
        elif self.path == "/get_server_info":
            body = {"version": "0.4.0-test"}
        elif self.path == "/flushes":
            with lock:
                body = dict(counts)
        else:
            return self.send(404, b'{"error":"not found"}')
        self.send(200, json.dumps(body).encode())

    def do_POST(self):
        request = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path == "/flush_cache":
            if NO_FLUSH:
                return self.send(404, b'{"error":"not found"}')
            with lock:
                cache.clear()
                counts["flushes"] += 1
            return self.send(200, b"Cache flushed.\n", "text/plain")
        if self.path != "/v1/chat/completions":
            return self.send(404, b'{"error":"not found"}')
        body = json.loads(request)
        key = json.dumps(body.get("messages"), sort_keys=True)
        prompt_tokens = max(2, len(key) // 4)
        with lock:
            hit = key in cache
            cache.add(key)
            counts["requests"] += 1
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": 12, "total_tokens": prompt_tokens + 12,
                 "prompt_tokens_details": {"cached_tokens": prompt_tokens - 1 if hit else 0}}
        words = answer_words(key)
        base = {"id": "chatcmpl-test", "created": 1, "model": "sglang-test"}
        if not body.get("stream"):
            message = {"role": "assistant", "content": " ".join(words)}
            out = dict(base, object="chat.completion", usage=usage,
                       choices=[{"index": 0, "message": message, "finish_reason": "stop"}])
            return self.send(200, json.dumps(out).encode())
        events = []
        for i, word in enumerate(words):
            delta = {"content": (" " if i else "") + word}
            events.append(dict(base, object="chat.completion.chunk",
                               choices=[{"index": 0, "delta": delta, "finish_reason": None}]))
        events.append(dict(base, object="chat.completion.chunk",
                           choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}]))
        events.append(dict(base, object="chat.completion.chunk", choices=[], usage=usage))
        stream = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"
        self.send(200, stream, "text/event-stream")


serve(Handler)
