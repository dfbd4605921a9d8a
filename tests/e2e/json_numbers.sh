#!/usr/bin/env bash
# Every command's --json (and export's JSON lines) on real runs: each parses, every number in it is
# a plain decimal (no exponent form like 5E-2, no NaN), every document names its schema_version,
# and absent values are null, never -1 or "-". inspect nests the header's settings and server info
# as objects, not JSON in strings. stats --csv and --markdown carry the same run's figures.
. "$(dirname "$0")/lib.sh"

start_listening SIM "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off
"$RETRACE" import "$ROOT/traces/gold-intents.jsonl" --out "$WORK/gold.rtrace" >/dev/null 2>&1
"$RETRACE" replay "$WORK/gold.rtrace" --target "$SIM_URL" --out "$WORK/a.rtrace" -c 4 \
  --set max_tokens=8 --set ignore_eos=true --json >"$WORK/replay.json"
"$RETRACE" replay "$WORK/gold.rtrace" --target "$SIM_URL" --out "$WORK/b.rtrace" -c 4 \
  --set max_tokens=6 --set ignore_eos=true --percentiles 50,99.9 >/dev/null

"$RETRACE" stats "$WORK/a.rtrace" "$WORK/b.rtrace" --slo ttft:1s --json >"$WORK/stats.json"
"$RETRACE" inspect "$WORK/a.rtrace" --json >"$WORK/inspect.json"
"$RETRACE" cat "$WORK/a.rtrace" --json >"$WORK/cat.json"
"$RETRACE" export "$WORK/a.rtrace" >"$WORK/export.jsonl"
status=0
"$RETRACE" diff "$WORK/a.rtrace" "$WORK/b.rtrace" --json >"$WORK/diff.json" || status=$?
[[ $status == 1 ]] || fail "diff of runs with different max_tokens: exit $status, want 1"
status=0
"$RETRACE" bisect --over runs "$WORK/a.rtrace" "$WORK/a.rtrace" "$WORK/b.rtrace" --json \
  >"$WORK/bisect.json" 2>"$WORK/bisect.err" || status=$?
[[ $status == 1 ]] || { cat "$WORK/bisect.err" >&2; fail "bisect --json: exit $status, want 1"; }

# Walks the text: json.loads hands every number's own text to the hooks, so an exponent or a NaN
# is seen as written, not as the value it parses to.
cat >"$WORK/walk.py" <<'PY'
import json, re, sys
PLAIN = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?\Z")
def number(text):
    if not PLAIN.match(text):
        sys.exit(f"{name}: {text!r} is not a plain decimal")
    return float(text)
def constant(text):
    sys.exit(f"{name}: {text} is not JSON")
def walk(value, where, lines):
    if isinstance(value, dict):
        for key, item in value.items():
            walk(item, where + "." + key, lines)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            walk(item, f"{where}[{i}]", lines)
    elif value == "-" or (isinstance(value, float) and value == -1 and not where.endswith(("offset_ns", "logprob"))):
        sys.exit(f"{name}: {where} is {value!r}; an absent value is null")
for name in sys.argv[1:]:
    text = open(name).read()
    documents = text.splitlines() if name.endswith(".jsonl") else [text]
    for document in documents:
        parsed = json.loads(document, parse_float=number, parse_int=number, parse_constant=constant)
        walk(parsed, name, document)
        if not name.endswith(".jsonl"):
            for report in parsed if isinstance(parsed, list) else [parsed]:
                if report.get("schema_version") != 2:
                    sys.exit(f"{name}: schema_version is {report.get('schema_version')!r}")
PY
python3 "$WORK/walk.py" "$WORK"/{replay,stats,inspect,cat,diff,bisect}.json "$WORK/export.jsonl" \
  || fail "a --json output breaks the number rule"

check_eq "$(jq -r 'length' "$WORK/stats.json")" 2 "stats of two traces is an array of two"
check_eq "$(jq -r '.[0].header.server' "$WORK/stats.json")" "$SIM_URL" "the header names the server"
check_eq "$(jq -r '.[0].header.schedule' "$WORK/stats.json")" "concurrency 4" "the header names the schedule"
check_eq "$(jq -r '.[0].ttft_ms | has("p95")' "$WORK/stats.json")" true "p95 is a default percentile"
check "input tokens counted" jq -e '.[0].input_tokens > 0 and .[0].total_tokens_per_s > .[0].output_tokens_per_s' "$WORK/stats.json"
check "peak in flight at -c 4" jq -e '.[0].in_flight.peak >= 1 and .[0].in_flight.peak <= 4' "$WORK/stats.json"
check_eq "$(jq -r '.goodput_per_s' "$WORK/replay.json")" null "goodput without --slo is null"
check_eq "$(jq -r '.header.settings.schedule.kind' "$WORK/inspect.json")" concurrency "inspect nests settings"
check_eq "$(jq -r '.header.server_info | type' "$WORK/inspect.json")" object "inspect nests server_info"
check_eq "$(jq -r '.exchanges | length' "$WORK/cat.json")" 20 "cat --json lists every exchange"
check "cat --json counts tokens" jq -e '.exchanges[0].choices[0].tokens | . > 0 and . <= 8' "$WORK/cat.json"
check_eq "$(jq -r '.boundary.point' "$WORK/bisect.json")" 2 "bisect --json names the boundary"
check_contains "$WORK/bisect.err" "boundary:" "bisect --json keeps its progress on stderr"

# CSV: one header row, one row per request of every trace, units in the column names.
"$RETRACE" stats "$WORK/a.rtrace" "$WORK/b.rtrace" --csv >"$WORK/stats.csv"
check_eq "$(wc -l <"$WORK/stats.csv")" 41 "a header and 40 request rows"
check_eq "$(head -1 "$WORK/stats.csv" | tr -d '\r' | cut -d, -f13)" ttft_ms "units in column names"
"$RETRACE" export "$WORK/a.rtrace" --csv >"$WORK/export.csv"
python3 -c 'import csv,sys; rows=list(csv.DictReader(open(sys.argv[1], newline=""))); assert len(rows)==20 and all(r["output"] for r in rows), rows[0]' \
  "$WORK/export.csv" || fail "export --csv reads back with Python's csv module"
"$RETRACE" diff "$WORK/a.rtrace" "$WORK/b.rtrace" --csv >"$WORK/diff.csv" || true
check_eq "$(wc -l <"$WORK/diff.csv")" 2 "diff --csv: a header and one row per candidate run"
check_eq "$(python3 -c 'import csv,sys; print(next(csv.DictReader(open(sys.argv[1], newline="")))["divergent"])' "$WORK/diff.csv")" \
  "$(jq -r '.runs[0].divergent' "$WORK/diff.json")" "diff --csv and --json agree"
"$RETRACE" stats "$WORK/a.rtrace" --markdown --percentiles 50,99.9 >"$WORK/stats.md"
check_contains "$WORK/stats.md" "| latency (ms) | p50 | p99.9 | max | mean | stddev | n |" "Markdown latency table"
check_contains "$WORK/stats.md" "model retrace-sim" "Markdown header names the model"
status=0
"$RETRACE" stats "$WORK/a.rtrace" --percentiles 50,abc 2>"$WORK/bad.err" || status=$?
check_eq "$status" 2 "a bad percentile list is an error"
check_contains "$WORK/bad.err" "'abc' is not a percentile" "the error names the bad item"
echo "ok"
