# The house's rules on the source tree: includes go only down a floor, and no source file of a
# room passes 500 lines (tests/e2e/house_floors.py says which). Then proof that the check can fail:
# a copy of a small tree with one climbing include and one long file is refused, naming both.
. "$(dirname "$0")/lib.sh"

python3 "$ROOT/tests/e2e/house_floors.py" "$ROOT" >"$WORK/tree.out" ||
  { cat "$WORK/tree.out" >&2; fail "the source tree breaks the house's rules"; }

mkdir -p "$WORK/planted/format" "$WORK/planted/report" "$WORK/planted/newroom"
printf '#include "report/html.hpp"\n' >"$WORK/planted/format/reader.cpp"
seq 1 501 | sed 's/^/int x/' >"$WORK/planted/report/long.cpp"
printf '#include "base/clock.hpp"\n' >"$WORK/planted/newroom/a.cpp"
status=0
python3 "$ROOT/tests/e2e/house_floors.py" "$WORK/planted" >"$WORK/planted.out" || status=$?
check_eq "$status" 1 "planted breaks are refused"
check_contains "$WORK/planted.out" "format/reader.cpp:1: format/ (floor 2) includes report/ (floor 6)" "the climbing include is named"
check_contains "$WORK/planted.out" "report/long.cpp: 501 lines, over 500" "the long file is named"
check_contains "$WORK/planted.out" "newroom/: a folder of code that is not a room" "an unknown room is named"
echo "ok"
