#!/usr/bin/env bash
# The main job on a fresh machine: install what is missing, build, and run `retrace demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh release >&2
exec build/release/retrace demo "$@"
