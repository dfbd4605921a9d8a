"""An upstream whose answers hold many parts (issue 46 item 1), for tests/production/many_parts.sh
and bench/many_parts.sh: /v1/embeddings answers EMBEDDINGS entries without "index", /v1/responses
ITEMS function_call items, /v1/messages ITEMS tool_use blocks, anything else a short chat answer.

  python3 parts_upstream.py EMBEDDINGS ITEMS    (prints "listening on http://127.0.0.1:PORT")
"""
import http.server, json, os, sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from loopback_http import reply, serve  # noqa: E402

EMBEDDINGS, ITEMS = int(sys.argv[1]), int(sys.argv[2])
BODIES = {
    "/v1/embeddings": b'{"object":"list","data":[' + b",".join([b'{"embedding":[1]}'] * EMBEDDINGS) +
                      b'],"usage":{"prompt_tokens":1,"total_tokens":1}}',
    "/v1/responses": b'{"object":"response","status":"completed","output":[' +
                     b",".join([b'{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}'] * ITEMS) + b"]}",
    "/v1/messages": b'{"type":"message","stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":1},"content":[' +
                    b",".join([b'{"type":"tool_use","id":"t","name":"f","input":{}}'] * ITEMS) + b"]}",
}
CHAT = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                                "finish_reason": "stop"}]}).encode()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        reply(self, 200, "application/json", b'{"object":"list","data":[{"id":"m","object":"model"}]}')

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        reply(self, 200, "application/json", BODIES.get(self.path, CHAT))

    def log_message(self, *args):
        pass


sys.argv = sys.argv[:1]  # serve() reads a port from argv[1]: any free one
serve(Handler)
