#!/usr/bin/env python3
"""An upstream that answers with the documented response shapes in tests/data/ byte for byte
(test-only tool, loopback only), so record, replay and diff meet them over real HTTP.

  POST /v1/chat/completions   by the body's "user" (sglang, tgi, openai; anything else: vllm; not
                              "model", which replay sets to the one /v1/models lists; with
                              "-whole", e.g. "tgi-whole", the whole answer even to a request that
                              asks to stream, as a server that ignores "stream" answers, since
                              replay streams every chat request by default),
                              "stream" and "tools", the file CHAT names: vLLM's streamed reasoning
                              and tool calls and whole tool calls, SGLang's streamed reasoning and
                              tool calls, TGI's text stream and tool calls streamed and whole, OpenAI's whole call
  POST /v1/responses          openai/responses-stream.sse when the body says "stream": true,
                              else openai/responses-nonstream.json
  POST /v1/messages           anthropic/messages-stream-thinking.sse (stream) or
                              anthropic/messages-nonstream.json
  POST /v1/embeddings         openai/embeddings.json
  POST /v1/rerank             a small JSON body retrace does not decode
  GET  /v1/models             one model
Streams go out in chunked pieces of 7 bytes, each sent on its own, so that events arrive split.
With --variant, some answers differ from the file by one token in one part: vLLM's and SGLang's
chat reasoning ("asks" -> "wants"), the tool call arguments of vLLM's stream ("Paris" -> "Lyon"),
TGI's stream ("oklyn" -> "onx") and OpenAI's whole answer ("Boston, MA" -> "Austin, TX"), the
Messages thinking ("50 + 3" -> "53"), the embedding's first value; the others are left as they are.
Listens on the port given as the first argument (0: any free one), prints
"listening on http://127.0.0.1:PORT".
"""
import json
import os
import socketserver
import sys

from loopback_http import ThreadingServer, read_body, read_head, serve

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data")
VARIANT = "--variant" in sys.argv[2:]
CHANGES = {
    "vllm/chat-stream-reasoning.sse": (b'" asks"', b'" wants"'),
    "vllm/chat-stream-tool-calls.sse": (b'"Paris"', b'"Lyon"'),
    "anthropic/messages-stream-thinking.sse": (b"400 + 50 + 3", b"400 + 53"),
    "openai/embeddings.json": (b"0.0023064255", b"0.0023064256"),
    "sglang/chat-stream-reasoning.sse": (b'" asks"', b'" wants"'),
    "tgi/chat-stream-tool-calls.sse": (b'"oklyn"', b'"onx"'),
    "openai/chat-nonstream-tool-calls.json": (b"Boston, MA", b"Austin, TX"),
}
# (server, streamed, with tools) -> the chat answer.
CHAT = {
    ("vllm", True, False): "vllm/chat-stream-reasoning.sse",
    ("vllm", True, True): "vllm/chat-stream-tool-calls.sse",
    ("vllm-whole", False, True): "vllm/chat-nonstream-tool-calls.json",
    ("sglang", True, False): "sglang/chat-stream-reasoning.sse",
    ("sglang", True, True): "sglang/chat-stream-tool-calls.sse",
    ("tgi", True, False): "tgi/chat-stream.sse",
    ("tgi", True, True): "tgi/chat-stream-tool-calls.sse",
    ("tgi-whole", False, True): "tgi/chat-nonstream-tool-calls.json",
    ("openai-whole", False, True): "openai/chat-nonstream-tool-calls.json",
}


def data(name):
    with open(os.path.join(DATA, name), "rb") as f:
        body = f.read()
    if VARIANT and name in CHANGES:
        old, new = CHANGES[name]
        assert old in body, (name, old)
        body = body.replace(old, new)
    return body


class Handler(socketserver.BaseRequestHandler):
    def read_request(self):
        read = read_head(self.request)
        if read is None:
            return None
        lines, rest = read
        body = read_body(self.request, lines, rest)
        if body is None:
            return None
        method, target = lines[0].split(" ")[:2]
        return method, target, body

    def send_json(self, body, status=200):
        self.request.sendall(b"HTTP/1.1 %d OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                             % (status, len(body), body))

    def send_stream(self, body):
        self.request.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                             b"Transfer-Encoding: chunked\r\nCache-Control: no-cache\r\n\r\n")
        for at in range(0, len(body), 7):
            piece = body[at:at + 7]
            self.request.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
        self.request.sendall(b"0\r\n\r\n")

    def handle(self):
        while True:
            request = self.read_request()
            if request is None:
                return
            method, target, body = request
            path = target.split("?")[0]
            try:
                fields = json.loads(body) if body else {}
            except ValueError:
                fields = {}
            stream = fields.get("stream") is True
            if method == "GET" and path == "/v1/models":
                self.send_json(b'{"object":"list","data":[{"id":"m","object":"model","owned_by":"shapes"}]}')
            elif path == "/v1/chat/completions":
                server = fields.get("user") if any(k[0] == fields.get("user") for k in CHAT) else "vllm"
                stream = stream and not server.endswith("-whole")
                name = CHAT.get((server, stream, "tools" in fields))
                if name is None:
                    self.send_json(b'{"error":{"message":"no such shape","type":"test"}}', 404)
                elif stream:
                    self.send_stream(data(name))
                else:
                    self.send_json(data(name))
            elif path == "/v1/responses":
                if stream:
                    self.send_stream(data("openai/responses-stream.sse"))
                else:
                    self.send_json(data("openai/responses-nonstream.json"))
            elif path == "/v1/messages":
                if stream:
                    self.send_stream(data("anthropic/messages-stream-thinking.sse"))
                else:
                    self.send_json(data("anthropic/messages-nonstream.json"))
            elif path == "/v1/embeddings":
                self.send_json(data("openai/embeddings.json"))
            elif path == "/v1/rerank":
                self.send_json(b'{"results":[{"index":0,"relevance_score":0.5}]}')
            else:
                self.send_json(b'{"error":{"message":"no such path","type":"test"}}', 404)


if __name__ == "__main__":
    serve(Handler, ThreadingServer)
