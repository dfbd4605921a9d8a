#!/usr/bin/env bash
# What retrace says about itself: the grouped top-level help, `retrace help [COMMAND]`, `--all`,
# -V/--version with the git commit, a bare `retrace`, and the generated bash completion.
. "$(dirname "$0")/lib.sh"

"$RETRACE" help >"$WORK/help" || fail "retrace help exit $?"
for heading in Capture Replay Compare Experiment Inspect Simulate; do
  grep -qx "$heading:" "$WORK/help" || fail "no '$heading:' heading in retrace help"
done
commands=(record shadow import replay merge diff sweep bisect inspect cat export stats serve demo)
for command in "${commands[@]}"; do
  line=$(grep -E "^  $command +[A-Z]" "$WORK/help") || fail "retrace help does not list $command"
  (( ${#line} <= 80 )) || fail "the help line of $command is wider than 80 columns: $line"
  "$RETRACE" help "$command" >"$WORK/help-$command" || fail "retrace help $command exit $?"
  "$RETRACE" "$command" --help >"$WORK/dash-help-$command" || true
  cmp -s "$WORK/help-$command" "$WORK/dash-help-$command" ||
    fail "retrace help $command differs from retrace $command --help"
done
# `retrace --help` is the same page as `retrace help`.
"$RETRACE" --help >"$WORK/dash-help" || true
cmp -s "$WORK/help" "$WORK/dash-help" || fail "retrace --help differs from retrace help"
check_contains "$WORK/help-record" "Usage: retrace record" "a command's help names the full command"

status=0
"$RETRACE" help nosuch >/dev/null 2>"$WORK/nosuch.err" || status=$?
check_eq "$status" 2 "retrace help of an unknown command"
check_contains "$WORK/nosuch.err" "\`nosuch\` is not a retrace command; \`retrace help\` lists them" \
  "the error names the fix"

"$RETRACE" help --all >"$WORK/all"
for option in --upstream --batch-variance --concurrency --fail-on --answers; do
  check_contains "$WORK/all" "$option" "retrace help --all holds every command's options"
done

# The capacity search's flags and exit statuses are in `retrace help sweep`.
"$RETRACE" help sweep >"$WORK/help-sweep"
for text in "--find" "--slo" "--attainment" "--stable" "--precision" "--max-probes" "--find-from" \
    "feasible_max" "search_history.json" "3 not resolved within --max-probes" "ttft:16tpot"; do
  check_contains "$WORK/help-sweep" "$text" "retrace help sweep describes the capacity search"
done

# retrace shadow's gate, its mirrors' credentials and its exit statuses are in its help.
"$RETRACE" help shadow >"$WORK/help-shadow"
for text in "--primary" "--candidate" "--control" "--fail-if-excess" "--candidate-header" "NAME=ENV" \
    "--mirror-queue" "--max-pairs" "--report-every" "1 when --fail-if-excess fails" "retrace diff shadow-run"; do
  check_contains "$WORK/help-shadow" "$text" "retrace help shadow describes shadow"
done

# -V and --version: the version and the commit built.
version=$("$RETRACE" --version)
check_eq "$("$RETRACE" -V)" "$version" "-V is --version"
[[ "$version" =~ ^retrace\ [0-9]+\.[0-9]+\.[0-9]+\ \(commit\ ([0-9a-f]{12}(-modified)?|unknown)\)$ ]] ||
  fail "version line: $version"
# The commit is one of this checkout's (not necessarily HEAD: the build may predate a commit).
commit=$(sed -E 's/.*\(commit ([0-9a-f]+).*/\1/' <<<"$version")
if git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1 && [[ "$commit" != unknown* ]]; then
  git -C "$ROOT" cat-file -e "$commit^{commit}" 2>/dev/null || fail "version $version names no commit of $ROOT"
fi

# A bare `retrace` shows the help on stderr and exits 2.
status=0
"$RETRACE" >"$WORK/bare.out" 2>"$WORK/bare.err" || status=$?
check_eq "$status" 2 "bare retrace"
check_contains "$WORK/bare.err" "Experiment:" "bare retrace shows the grouped help"

# The bash completion, as bash calls it.
"$RETRACE" completion bash >"$WORK/retrace.bash"
complete_line() {
  bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _retrace; printf "%s\n" "${COMPREPLY[@]}"' \
    _ "$WORK/retrace.bash" "$@"
}
check_eq "$(complete_line retrace rec)" "record" "completing a command"
check_eq "$(complete_line retrace record --inc)" "--include-path" "completing an option of the command"
check_eq "$(complete_line retrace help dif)" "diff" "completing help's command"
check_eq "$(complete_line retrace --vers)" "--version" "completing a top-level option"
touch "$WORK/run-one.rtrace"
check_eq "$(cd "$WORK" && complete_line retrace inspect run-o)" "run-one.rtrace" "completing a file argument"
check_eq "$(cd "$WORK" && complete_line retrace replay --out run-o)" "run-one.rtrace" "completing an option's value"

# --derive-tokens (format 1.7, off by default) states its trade-off where long captures happen.
for command in record replay sweep; do
  "$RETRACE" help "$command" | tr -s ' \n' ' ' >"$WORK/flat-$command"
  for text in "--derive-tokens" "traces ~40 % smaller" "reading them costs 1.1-2.2x CPU"; do
    check_contains "$WORK/flat-$command" "$text" "retrace help $command states --derive-tokens' trade-off"
  done
done
echo "ok"
