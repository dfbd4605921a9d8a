"""The tier's real client: posts chat requests to URL (the `record` proxy, in the tests) from
THREADS threads on http.client, each on its own kept-alive connection, and prints how many
answers came back whole: status 200 and, streamed, data events up to `data: [DONE]`; not
streamed, a first choice with content.

  python3 client.py URL REQUESTS.jsonl THREADS   (lines as `retrace import` reads them:
                                                 {"request": BODY, ...})
"""
import http.client, json, queue, sys, threading, urllib.parse

url = urllib.parse.urlparse(sys.argv[1])
work, whole = queue.Queue(), []
for line in open(sys.argv[2]):
    work.put(json.loads(line)["request"])


def is_whole(response, streamed):
    if response.status != 200:
        response.read()
        return False
    if not streamed:
        return bool(json.loads(response.read())["choices"][0]["message"]["content"])
    events, done = 0, False
    for line in response:
        if line.startswith(b"data: [DONE]"):
            done = True
        elif line.startswith(b"data: "):
            events += 1
    return done and events > 0


def client():
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=600)
    while True:
        try:
            body = work.get_nowait()
        except queue.Empty:
            break
        conn.request("POST", "/v1/chat/completions", json.dumps(body), {"content-type": "application/json"})
        if is_whole(conn.getresponse(), body.get("stream", False)):
            whole.append(1)
    conn.close()


threads = [threading.Thread(target=client) for _ in range(int(sys.argv[3]))]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(len(whole))
