#!/usr/bin/env bash
# retrace shadow --scrape-interval (#42): each leg's /metrics into that leg's own trace, on its
# clock. Three `retrace serve`s; the candidate's page is named where it has none
# (--candidate-scrape-url URL/no-metrics-here, a 404): its leg says so in one line and the run
# goes on, every request still mirrored to it. The primary's and the control's series each count their own
# server's requests (the sim's requests-served increases add up to what it answered), the
# baseline before the leg's first send and the last after the drain.
. "$(dirname "$0")/lib.sh"

COUNT=8
import_numbered "$WORK/source.rtrace" $COUNT \
  '{"request":{"model":"retrace-sim","prompt":"Question %d: what now?","max_tokens":8,"temperature":0,"stream":false}}' \
  --endpoint completions

SERVE=(serve --listen 127.0.0.1:0 --latency-model off)
start_listening primary "$RETRACE" "${SERVE[@]}"
start_listening control "$RETRACE" "${SERVE[@]}"
start_listening candidate "$RETRACE" "${SERVE[@]}" --weights-seed 1
start_listening shadow "$RETRACE" shadow --primary "$primary_URL" --control "$control_URL" \
  --candidate "$candidate_URL" --out "$WORK/run" --listen 127.0.0.1:0 --report-every 100ms --scrape-interval 100ms \
  --candidate-scrape-url "$candidate_URL/no-metrics-here"

"$RETRACE" replay "$WORK/source.rtrace" --target "$shadow_URL" -c 2 -o "$WORK/through.rtrace" --no-scrape \
  >/dev/null 2>"$WORK/through.err" || { cat "$WORK/through.err" >&2; fail "replay through shadow"; }
pairs_of() { json "$WORK/run/summary.json" "s.legs.$1 ? s.legs.$1.pairs + s.legs.$1.not_compared + s.legs.$1.errors : -1"; }
wait_until_output "$COUNT candidate pairs" $COUNT pairs_of candidate
wait_until_output "$COUNT control pairs" $COUNT pairs_of control
stop "$shadow_PID" || true

check_eq "$(grep -c 'usable' "$WORK/shadow.err")" 1 "the candidate without /metrics: one line"
check_contains "$WORK/shadow.err" "candidate: no usable $candidate_URL/no-metrics-here (HTTP 404)" "the candidate's leg named"
for leg in primary control candidate; do
  "$RETRACE" export --metrics "$WORK/run/$leg" >"$WORK/$leg.series" 2>"$WORK/$leg.series.err" || fail "$leg: export --metrics"
  "$RETRACE" export "$WORK/run/$leg" >"$WORK/$leg.jsonl" || fail "$leg: export"
done
check_eq "$(grep -c '"exchange"' "$WORK/candidate.jsonl")" $COUNT "the candidate still mirrored every request"
for leg in primary control; do
  python3 "$(dirname "$0")/served_series.py" "$WORK/$leg.series" "$WORK/$leg.jsonl" "$COUNT" || fail "$leg: its own series"
done
echo "PASS"
