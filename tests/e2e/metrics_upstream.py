#!/usr/bin/env python3
"""An OpenAI-shaped upstream whose /metrics is what a test needs (test-only, loopback only):

  GET  /v1/models            one model
  POST /v1/completions       a fixed non-streamed completion, with vLLM's per-request metrics
  GET  /metrics              by mode (the second argument):
         none   404, as a server started without its metrics
         huge   a 50 MB page of valid samples
         odd    a page with a malformed line, whose counter reads 100 on the first two GETs (the
                run header's and the baseline scrape), 200 on the third, then 5 (a restart) from
                then on, and whose gauge `odd_running` counts the pages served, as does the
                histogram `odd_latency` (its _count and _sum)
  GET  /scrapes              how many /metrics GETs arrived, how many carried X-Retrace-Probe: 1,
                             and on how many connections (client ports) they came

Listens on the port given as the first argument (0: any free one) and prints
"listening on http://127.0.0.1:PORT".
"""
import http.server
import json
import sys
import threading

from loopback_http import reply, serve

MODE = sys.argv[2] if len(sys.argv) > 2 else "none"
lock = threading.Lock()
counts = {"scrapes": 0, "probes": 0, "connections": 0}
ports = set()
HUGE = None
if MODE == "huge":
    line = b'huge_series{label="' + b"x" * 60 + b'"} 1\n'
    HUGE = line * (50 * 1024 * 1024 // len(line) + 1)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path == "/v1/models":
            body = {"object": "list", "data": [{"id": "test-model", "object": "model"}]}
            reply(self, 200, "application/json", json.dumps(body).encode())
        elif self.path == "/scrapes":
            with lock:
                reply(self, 200, "application/json", json.dumps(counts).encode())
        elif self.path == "/metrics":
            with lock:
                counts["scrapes"] += 1
                counts["probes"] += self.headers.get("X-Retrace-Probe") == "1"
                ports.add(self.client_address[1])
                counts["connections"] = len(ports)
                n = counts["scrapes"]
            if MODE == "none":
                reply(self, 404, "text/plain", b"not found\n")
            elif MODE == "huge":
                reply(self, 200, "text/plain; version=0.0.4", HUGE)
            else:
                # The run's header asks once before the baseline scrape: both see 100.
                counter = 100 if n <= 2 else 200 if n == 3 else 5
                page = ("# TYPE odd_requests_total counter\n"
                        f"odd_requests_total {counter}\n"
                        "# TYPE odd_running gauge\n"
                        f"odd_running {n}\n"
                        "# TYPE odd_latency histogram\n"
                        f'odd_latency_bucket{{le="+Inf"}} {n}\n'
                        f"odd_latency_sum {n}\n"
                        f"odd_latency_count {n}\n"
                        "this line is not a sample\n")
                reply(self, 200, "text/plain; version=0.0.4", page.encode())
        else:
            reply(self, 404, "text/plain", b"not found\n")

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(length)
        body = {"id": "cmpl-1", "object": "text_completion", "model": "test-model",
                "choices": [{"index": 0, "text": " fine", "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4,
                          "prompt_tokens_details": {"cached_tokens": 2}},
                # vLLM's --enable-per-request-metrics
                "metrics": {"time_to_first_token_ms": 3.5, "generation_time_ms": 1.25,
                            "queue_time_ms": 2.0, "mean_itl_ms": None, "tokens_per_second": 800.0}}
        reply(self, 200, "application/json", json.dumps(body).encode())


serve(Handler)
