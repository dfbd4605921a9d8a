#!/usr/bin/env bash
# `retrace help TOPIC` and `retrace help topics`: every topic names a guide in docs/ (the guides
# other branches add are said while absent), every guide in docs/ has a topic, a topic names no
# command, `help TOPIC` finds the guide in the source tree of a build, and the completion offers the
# topics. (e2e.package_deb checks the installed path and the man page's GUIDES section.)
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/docs/lib.sh"  # GUIDES_ARRIVING

"$RETRACE" help topics >"$WORK/topics" || fail "retrace help topics exit $?"
topics=$(awk '/^  [a-z-]+ +[A-Z]/ { print $1 }' "$WORK/topics")
(( $(wc -w <<<"$topics") >= 8 )) || fail "retrace help topics lists fewer than 8 topics: $(cat "$WORK/topics")"
"$RETRACE" help >"$WORK/help"
guides=()
for topic in $topics; do
  grep -qE "^  $topic +[A-Z]" "$WORK/help" && fail "topic $topic is also a command: \`retrace help $topic\` would explain the command"
  "$RETRACE" help "$topic" >"$WORK/topic-$topic" || fail "retrace help $topic exit $?"
  guide=$(grep -oE '^The guide: docs/[a-z-]+\.md$' "$WORK/topic-$topic" | sed 's/^The guide: //') \
    || fail "retrace help $topic names no guide: $(cat "$WORK/topic-$topic")"
  guides+=("$guide")
  if [[ -f "$ROOT/$guide" ]]; then
    # The build's binary sits in build/FLAVOUR/ of the source tree when ctest runs it.
    if [[ "$(cd "$(dirname "$RETRACE")/../.." && pwd -P)" == "$(cd "$ROOT" && pwd -P)" ]]; then
      check_contains "$WORK/topic-$topic" "here: $(cd "$ROOT" && pwd -P)/$guide" "retrace help $topic finds the guide"
    fi
  elif [[ " $GUIDES_ARRIVING " == *" $guide "* ]]; then
    echo "topic $topic: $guide is not in this tree yet (arriving with another branch)"
  else
    fail "retrace help $topic names $guide, which does not exist"
  fi
done
# Every guide has a topic.
for file in "$ROOT"/docs/*.md; do
  guide=docs/$(basename "$file")
  case "$guide" in docs/README.md|docs/DESIGN.md|docs/STYLE.md) continue ;; esac
  [[ " ${guides[*]} " == *" $guide "* ]] || fail "$guide has no topic in cli/help_topics.cpp"
done
check_contains "$WORK/help" "retrace help topics" "the top-level help names the topics"

status=0
"$RETRACE" help recordin >/dev/null 2>"$WORK/nosuch.err" || status=$?
check_eq "$status" 2 "retrace help of an unknown topic"
check_contains "$WORK/nosuch.err" "\`retrace help topics\` the guides" "the error names the topics"

"$RETRACE" completion bash >"$WORK/retrace.bash"
completed=$(bash -c '. "$1"; COMP_WORDS=(retrace help repea); COMP_CWORD=2; _retrace; printf "%s\n" "${COMPREPLY[@]}"' _ "$WORK/retrace.bash")
check_eq "$completed" "repeatability" "completing a topic"
echo "ok"
