# retrace record --sample: whole sessions kept, the same ones after a restart. 1,000 sessions of
# 10 chat turns against `retrace serve` (half named by --session-header, half by their first user
# message), turns 1-5 through one record and turns 6-10 through a second one with the same seed:
# every session is recorded whole or not at all in each, the two keep the same sessions, the kept
# fraction is within 5 standard deviations of --sample 0.3, and what was not kept was forwarded
# (every request answered 200) and counted in the summary. 40 more sessions of 3 turns whose first
# user message is 100 KB (named by it, no header) go through the first record: kept whole too.
. "$(dirname "$0")/lib.sh"

start_listening serve "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --max-model-len 1048576

run_half() {  # NAME FIRST_TURN
  start_listening "$1" "$RETRACE" record --upstream "$serve_URL" --out "$WORK/$1.rtrace" \
    --listen 127.0.0.1:0 --no-server-info --sample 0.3 --seed 42 --session-header X-Conversation
  local url_var="${1}_URL" pid_var="${1}_PID"
  python3 - "${!url_var#http://}" "$2" <<'PY' || fail "traffic through $1"
import http.client, json, sys, threading
host, port = sys.argv[1].rsplit(":", 1)
first_turn = int(sys.argv[2])
def worker(sessions):
    c = http.client.HTTPConnection(host, int(port), timeout=60)
    for i in sessions:
        messages = [{"role": "user", "content": f"session {i}: hello"}]
        for turn in range(first_turn + 5):
            if turn >= first_turn:
                headers = {"Content-Type": "application/json"}
                if i < 500: headers["X-Conversation"] = f"conv-{i}"
                body = json.dumps({"model": "retrace-sim", "messages": messages, "max_tokens": 2})
                c.request("POST", "/v1/chat/completions", body=body, headers=headers)
                r = c.getresponse()
                r.read()
                assert r.status == 200, r.status
            messages = messages + [{"role": "assistant", "content": f"a{turn}"},
                                   {"role": "user", "content": f"q{turn}"}]
def big_sessions():  # the first record only: 3 turns each, a 100 KB first user message
    c = http.client.HTTPConnection(host, int(port), timeout=60)
    for i in range(1000, 1040):
        messages = [{"role": "user", "content": f"session {i}: " + "lorem ipsum " * 8600}]
        for turn in range(3):
            body = json.dumps({"model": "retrace-sim", "messages": messages, "max_tokens": 2})
            c.request("POST", "/v1/chat/completions", body=body, headers={"Content-Type": "application/json"})
            r = c.getresponse()
            r.read()
            assert r.status == 200, r.status
            messages = messages + [{"role": "assistant", "content": "a"}, {"role": "user", "content": "q"}]
threads = [threading.Thread(target=worker, args=(range(k, 1000, 8),)) for k in range(8)]
if first_turn == 0: threads.append(threading.Thread(target=big_sessions))
for t in threads: t.start()
for t in threads: t.join()
PY
  stop "${!pid_var}" || { cat "$WORK/$1.err" >&2; fail "record $1 did not exit 0"; }
  "$RETRACE" export "$WORK/$1.rtrace" >"$WORK/$1.jsonl"
}
run_half first 0
run_half second 5

python3 - "$WORK/first.jsonl" "$WORK/second.jsonl" "$WORK/first.err" "$WORK/second.err" <<'PY' || fail "sampling"
import collections, json, math, re, sys
def sessions(path):
    turns = collections.defaultdict(set)
    for line in open(path):
        if '"exchange"' not in line[:20]: continue
        e = json.loads(line)["exchange"]
        messages = json.loads(e["request"]["body"])["messages"]
        first = messages[0]["content"]
        i = int(re.match(r"session (\d+):", first).group(1))
        if i < 500: assert e["session_id"] == f"conv-{i}", e["session_id"]
        turns[i].add(len(messages))
    return turns
first, second = sessions(sys.argv[1]), sessions(sys.argv[2])
big = {i: first.pop(i) for i in list(first) if i >= 1000}
assert all(t == {1, 3, 5} for t in big.values()), f"100 KB sessions not kept whole: {big}"
assert 0 < len(big) < 40, f"{len(big)} of the 40 sessions named by a 100 KB message kept"
for name, run, lengths in (("first", first, {1, 3, 5, 7, 9}), ("second", second, {11, 13, 15, 17, 19})):
    broken = {i: sorted(t) for i, t in run.items() if t != lengths}
    assert not broken, f"{name}: sessions not kept whole: {dict(list(broken.items())[:5])}"
assert set(first) == set(second), f"a restart kept other sessions: {sorted(set(first) ^ set(second))[:10]}"
kept, n, p = len(first), 1000, 0.3
assert abs(kept - n * p) <= 5 * math.sqrt(n * p * (1 - p)), kept
assert any(i < 500 for i in first) and any(i >= 500 for i in first), "both kinds of session name kept some"
for path, run, extra, extra_kept in ((sys.argv[3], first, 120, 3 * len(big)), (sys.argv[4], second, 0, 0)):
    summary = open(path).read()
    recorded = 5 * len(run) + extra_kept
    assert f"recorded {recorded} exchange(s) of {5000 + extra} forwarded" in summary, summary
    assert f"{5000 + extra - recorded} sampled out" in summary, summary
print(f"kept {kept} of 1000 sessions")
PY
echo "PASS record_sample"
