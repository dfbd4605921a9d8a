#!/usr/bin/env bash
# release-only: file modes and planted symlinks (27 s under ASan), which are not memory; under the sanitizers the private writes' code runs in format_private_test
# Under the widest umask, what retrace writes stays private: a report 0600, a sweep's and a
# study's directory 0700 with their files 0600; a planted `report.html.tmp` symlink does not
# redirect the write, nor do symlinks planted under a run's trace names (RUN.rtrace.partial,
# RUN.rtrace) in a directory another user made for a study or a sweep: they are replaced by the
# run's own files, and what they point to is left as it was.
. "$(dirname "$0")/lib.sh"
umask 000

"$RETRACE" import "$ROOT/traces/gold-intents.jsonl" --out "$WORK/gold.rtrace" 2>/dev/null
start_listening serve "$RETRACE" serve --listen 127.0.0.1:0
"$RETRACE" sweep "$WORK/gold.rtrace" --target "$serve_URL" --concurrency 1,2 --out "$WORK/sweep/runs" \
  >/dev/null 2>"$WORK/sweep.err" || { cat "$WORK/sweep.err" >&2; fail "sweep failed"; }
check_eq "$(stat -c %a "$WORK/sweep")" 700 "a directory made above a sweep's"
check_eq "$(stat -c %a "$WORK/sweep/runs")" 700 "a sweep's directory"
for file in "$WORK"/sweep/runs/*; do
  check_eq "$(stat -c %a "$file")" 600 "$(basename "$file")"
done

echo "keep me" >"$WORK/victim"
ln -s "$WORK/victim" "$WORK/report.html.tmp"
"$RETRACE" report "$WORK/sweep/runs" -o "$WORK/report.html" >/dev/null
check_eq "$(cat "$WORK/victim")" "keep me" "a planted .tmp symlink redirected the report"
check_eq "$(stat -c %a "$WORK/report.html")" 600 "the report"
check_contains "$WORK/report.html" "<html" "the report was written"

LIMIT=(--limit 4 --token-ids logprobs)
"$RETRACE" study "$WORK/gold.rtrace" --target "$serve_URL" "${LIMIT[@]}" --concurrency 1 --repeat 1 \
  --cache cold --greedy --out "$WORK/study/runs" >/dev/null 2>"$WORK/study.err" || { cat "$WORK/study.err" >&2; fail "study failed"; }
check_eq "$(stat -c %a "$WORK/study/runs")" 700 "a study's directory"
for file in "$WORK"/study/runs/*; do
  [[ -d "$file" ]] && continue
  check_eq "$(stat -c %a "$file")" 600 "study's $(basename "$file")"
done

plant() {  # plant DIR RUN: symlinks under RUN's trace names, to files that must stay as they are
  mkdir -p -m 777 "$1"
  echo "keep me" >"$1.victim-partial"; echo "keep me" >"$1.victim-out"
  ln -s "$1.victim-partial" "$1/$2.rtrace.partial"
  ln -s "$1.victim-out" "$1/$2.rtrace"
}
planted_check() {  # planted_check DIR RUN WHAT
  check_eq "$(cat "$1.victim-partial")" "keep me" "$3: a planted $2.rtrace.partial redirected the run"
  check_eq "$(cat "$1.victim-out")" "keep me" "$3: a planted $2.rtrace redirected the run"
  [[ -f "$1/$2.rtrace" && ! -L "$1/$2.rtrace" ]] || fail "$3: $2.rtrace is not the run's own file"
  [[ ! -e "$1/$2.rtrace.partial" && ! -L "$1/$2.rtrace.partial" ]] || fail "$3: $2.rtrace.partial is left"
  check_eq "$(stat -c %a "$1/$2.rtrace")" 600 "$3: $2.rtrace"
  "$RETRACE" stats "$1/$2.rtrace" >/dev/null || fail "$3: $2.rtrace is not a trace"
}
plant "$WORK/shared-study" baseline
"$RETRACE" study "$WORK/gold.rtrace" --target "$serve_URL" "${LIMIT[@]}" --concurrency 1 --repeat 1 \
  --cache cold --greedy --force --out "$WORK/shared-study" >/dev/null 2>"$WORK/shared-study.err" \
  || { cat "$WORK/shared-study.err" >&2; fail "study into a directory with planted symlinks"; }
planted_check "$WORK/shared-study" baseline study
plant "$WORK/shared-sweep" c1-r1
"$RETRACE" sweep "$WORK/gold.rtrace" --target "$serve_URL" --concurrency 1 --limit 4 --force --out "$WORK/shared-sweep" \
  >/dev/null 2>"$WORK/shared-sweep.err" || { cat "$WORK/shared-sweep.err" >&2; fail "sweep into a directory with planted symlinks"; }
planted_check "$WORK/shared-sweep" c1-r1 sweep
echo "PASS private_outputs"
