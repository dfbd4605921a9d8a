#!/usr/bin/env bash
# The whole test suite, from a clean checkout: installs what is missing, builds, runs every unit
# and end-to-end test, then builds again under AddressSanitizer + UBSan and runs everything again.
# Usage: scripts/test.sh [ctest args...]    (e.g. -R format to run a subset)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
# The official `openai` client, used by the compatibility tests (pinned in tests/npm).
(cd tests/npm && npm ci --silent --no-audit --no-fund >/dev/null)

status=0
for flavour in release asan; do
  echo "== build: $flavour"
  scripts/build.sh "$flavour"
  echo "== test: $flavour"
  (cd "build/$flavour" && ctest --output-on-failure -j"$(nproc)" "$@") || status=1
done
exit $status
