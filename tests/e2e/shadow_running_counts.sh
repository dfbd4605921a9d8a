#!/usr/bin/env bash
# retrace shadow's summary.json while the run goes: primary.forwarded counts every request relayed to
# the primary (sampled out or not, as record's summary does) and primary.sampled_out those --sample
# kept out, under the same names and with the same values the final summary gives; they used to be
# the mirrored count and 0 until the end. 12 requests in 12 sessions through --sample 0.5: the
# running summary is read (a bounded poll of the file, while shadow still runs) until it counts
# all 12 forwarded with the sampled-out ones plus the candidate's pairs making up the 12.
. "$(dirname "$0")/lib.sh"

N=12
SERVE=(serve --listen 127.0.0.1:0 --latency-model off)
start_listening primary "$RETRACE" "${SERVE[@]}"
start_listening candidate "$RETRACE" "${SERVE[@]}"
start_listening shadow "$RETRACE" shadow --primary "$primary_URL" --candidate "$candidate_URL" \
  --out "$WORK/run" --listen 127.0.0.1:0 --report-every 50ms --sample 0.5 --session-header X-Session

for i in $(seq 1 $N); do
  curl -sf -H "X-Session: conversation-$i" -H 'Content-Type: application/json' \
    -d "{\"model\":\"retrace-sim\",\"prompt\":\"question $i\",\"max_tokens\":4}" \
    "$shadow_URL/v1/completions" >/dev/null || fail "request $i through shadow"
done

summary() { json "$WORK/run/summary.json" "$1" 2>/dev/null || echo none; }
settled() {
  test "$(summary 's.state + " " + s.primary.forwarded + " " + (s.primary.sampled_out + s.legs.candidate.pairs)')" \
    = "running $N $N"
}
wait_until "the running summary counting $N forwarded, sampled out and compared" settled
cp "$WORK/run/summary.json" "$WORK/running.json"
sampled_out=$(json "$WORK/running.json" 's.primary.sampled_out')
check "--sample 0.5 kept some of the $N sessions out and some in ($sampled_out out)" test "$sampled_out" -gt 0 -a "$sampled_out" -lt $N

stop "$shadow_PID" || fail "shadow did not exit 0"
check_eq "$(summary 's.state')" terminated "the final summary"
check_eq "$(summary 's.primary.forwarded + " " + s.primary.sampled_out')" "$N $sampled_out" \
  "the final summary's forwarded and sampled_out equal the running ones"
check_contains "$WORK/shadow.err" "answered $N request(s), $((N - sampled_out)) recorded" "the final lines"
echo "PASS shadow_running_counts"
