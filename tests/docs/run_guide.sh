#!/usr/bin/env bash
# The test docs.NAME (tests/CMakeLists.txt registers one for every docs/*.md but DESIGN and STYLE):
# runs the ```sh blocks of the guide docs/NAME.md against real `retrace serve` instances, as
# tests/docs/lib.sh describes, and says which blocks it did not run and why.
. "$(dirname "$0")/../e2e/lib.sh"
. "$(dirname "$0")/lib.sh"

guide=${1:?usage: run_guide.sh docs/NAME.md}
run_guide "$guide"
echo "ok: $guide ($(grep -c . "$WORK/guide.skipped" || true) blocks not run here)"
