#!/usr/bin/env python3
"""A TLS front for end-to-end tests (test-only, loopback only): terminates TLS with the given
certificate and pipes the plain bytes to a backend, both ways, one thread per direction.

Usage: tls_front.py CERT KEY BACKEND_PORT
Prints "listening on https://127.0.0.1:PORT".
"""
import socket
import ssl
import sys
import threading


def pump(source, sink):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for s in (source, sink):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def serve(client, context, backend_port):
    try:
        tls = context.wrap_socket(client, server_side=True)
    except (ssl.SSLError, OSError) as e:
        print(f"tls_front: handshake failed: {e}", file=sys.stderr, flush=True)
        client.close()
        return
    backend = socket.create_connection(("127.0.0.1", backend_port))
    threading.Thread(target=pump, args=(backend, tls), daemon=True).start()
    pump(tls, backend)


def main():
    cert, key, backend_port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    listener = socket.create_server(("127.0.0.1", 0))
    print(f"listening on https://127.0.0.1:{listener.getsockname()[1]}", flush=True)
    while True:
        client, _ = listener.accept()
        threading.Thread(target=serve, args=(client, context, backend_port), daemon=True).start()


if __name__ == "__main__":
    main()
