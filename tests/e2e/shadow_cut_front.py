#!/usr/bin/env python3
"""A front that closes connections mid-response (test-only tool, loopback only), for shadow's
fault tests: it pipes each connection to a real backend (`retrace serve`), passes the backend's
response header and the first CUT bytes of its body to the client, then resets the connection
(SO_LINGER 0: RST, no terminating chunk), as a candidate deployment that crashes or is cut by a
load balancer mid-answer does. Every connection is cut; each cut is logged to stderr.

Usage: shadow_cut_front.py BACKEND_PORT [CUT]   (CUT: body bytes passed on, default 16)
Prints "listening on http://127.0.0.1:PORT".
"""
import socket
import struct
import sys
import threading

from loopback_http import ThreadingServer, serve
import socketserver

BACKEND_PORT = int(sys.argv[1])
CUT = int(sys.argv[2]) if len(sys.argv) > 2 else 16
MAX_HEAD = 1 << 16


def pump_requests(client, backend):
    try:
        while True:
            data = client.recv(65536)
            if not data:
                break
            backend.sendall(data)
    except OSError:
        pass


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        client = self.request
        backend = socket.create_connection(("127.0.0.1", BACKEND_PORT))
        threading.Thread(target=pump_requests, args=(client, backend), daemon=True).start()
        response = b""
        try:
            # Bounded: the head is at most MAX_HEAD bytes, then CUT bytes of body.
            while len(response) < MAX_HEAD:
                data = backend.recv(65536)
                if not data:
                    break
                response += data
                head_end = response.find(b"\r\n\r\n")
                if head_end >= 0 and len(response) >= head_end + 4 + CUT:
                    break
            head_end = response.find(b"\r\n\r\n")
            client.sendall(response[: head_end + 4 + CUT] if head_end >= 0 else response)
        except OSError:
            pass
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        print(f"cut after {CUT} body bytes", file=sys.stderr, flush=True)
        client.close()
        backend.close()


serve(Handler, ThreadingServer, port=0)
