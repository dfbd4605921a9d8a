#!/usr/bin/env bash
# retrace shadow's mirror against a Python upstream (tests/e2e/loopback_http.py's threaded
# http.server, which every Python test upstream serves with) under load: 400 requests at -c 64,
# each mirrored. With socketserver's default listen backlog (5) the mirror's burst of up to 64
# new connections overflowed the listener, the kernel dropped the surplus handshakes and those
# mirror requests waited for TCP's retransmissions (1, 3, 7, 15, 31 s: the "stalls" of sessions 18
# and 19). Run in a network namespace of its own (unshare -rn: its loopback and its counters are
# this test's alone), it checks the kernel's own count of dropped handshakes, TcpExtListenOverflows,
# is 0 once every request was compared, with no mirror error. Skipped (77) where unshare -rn or ip
# is not allowed.
# release-only: a test upstream's listen backlog under load, not retrace's memory; shadow_verdict, shadow_faults and shadow_scrape run the mirror under the sanitizers
if [[ -z "${RETRACE_IN_NETNS:-}" ]]; then
  if ! command -v ip >/dev/null || ! unshare -rn ip link set lo up 2>/dev/null; then
    echo "SKIP: needs a network namespace of its own (unshare -rn) and ip"; exit 77
  fi
  RETRACE_IN_NETNS=1 exec unshare -rn bash -c 'ip link set lo up && exec bash "$0"' "$0"
fi
. "$(dirname "$0")/lib.sh"

overflows() { awk '/^TcpExt:/ { if (!names) { split($0, names_of); names = 1 } else for (i = 2; i <= NF; ++i)
  if (names_of[i] == "ListenOverflows") print $i }' /proc/net/netstat; }
check_eq "$(overflows)" 0 "a fresh namespace's count"

N=400
import_numbered "$WORK/source.rtrace" $N \
  '{"request":{"model":"retrace-sim","prompt":"Question %d: what now?","max_tokens":8,"stream":false}}' \
  --endpoint completions

start_listening primary "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off
start_listening candidate python3 "$ROOT/tests/e2e/metrics_upstream.py" 0 none
start_listening shadow "$RETRACE" shadow --primary "$primary_URL" --candidate "$candidate_URL" \
  --out "$WORK/run" --listen 127.0.0.1:0 --report-every 50ms
"$RETRACE" replay "$WORK/source.rtrace" --target "$shadow_URL" -c 64 --no-scrape -o "$WORK/through.rtrace" \
  >/dev/null 2>"$WORK/through.err" || { cat "$WORK/through.err" >&2; fail "replay through shadow"; }

ended() { json "$WORK/run/summary.json" 's.legs.candidate.pairs + s.legs.candidate.errors + s.legs.candidate.not_compared + s.legs.candidate.dropped'; }
for i in $(seq 1 300); do [[ "$(ended 2>/dev/null)" == "$N" ]] && break; sleep 0.1; done
[[ "$(ended 2>/dev/null)" == "$N" ]] || { cat "$WORK/run/summary.json" "$WORK/shadow.err" >&2
  fail "all $N mirror exchanges did not end within 30 s (TcpExtListenOverflows $(overflows))"; }
check_eq "$(json "$WORK/run/summary.json" 's.legs.candidate.pairs + "/" + s.legs.candidate.errors')" "$N/0" \
  "every request mirrored and compared, none failed"
check_eq "$(overflows)" 0 "handshakes the kernel dropped at a full listen backlog (TcpExtListenOverflows)"
stop "$shadow_PID" || fail "shadow did not exit 0"
echo "PASS shadow_python_upstream"
