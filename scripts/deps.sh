#!/usr/bin/env bash
# Installs the Debian packages retrace needs to build, test, package and benchmark, when any is
# missing (help2man makes the man page, dpkg-dev the .deb's dependencies; the package test runs
# `man` and the bash completion).
# Safe to run again: it does nothing when everything is present.
set -euo pipefail

packages=(cmake g++ pkg-config make
          libboost1.81-dev libboost-json1.81-dev
          capnproto libcapnp-dev
          libzstd-dev zstd libcli11-dev libxxhash-dev catch2 libssl-dev
          zlib1g-dev libbrotli-dev  # HTTP content codings: gzip and deflate, br (zstd is above)
          ccache ninja-build
          help2man dpkg-dev bash-completion man-db
          nodejs npm curl jq python3 openssl
          chromium  # the HTML report is checked in a real browser (tests/e2e/report_browser.sh)
          clang-14 libclang-rt-14-dev  # libFuzzer (scripts/fuzz.sh)
          git python3-numpy  # git and numpy: scripts/llama-server.sh (llama.cpp sources, the tiny model)
          python3-dev pybind11-dev python3-pandas python3-pytest  # the Python module (python/, tests/python/)
          nginx-light  # a gzip-compressing front in tests/e2e/content_coding.sh (and bench/)
          slurm-wlm munge  # a real one-node Slurm cluster in tests/slurm/ (deploy/slurm/)
          buildah podman runc  # the container image, built offline and run (deploy/image/, tests/image/)
          python3-kubernetes  # the manifests checked against the API types (tests/e2e/deploy_manifests.sh)
          iproute2 util-linux)  # ip and unshare: a network namespace of a test's own (tests/e2e/shadow_python_upstream.sh)
if [[ "${1:-}" == "--bench" ]]; then
  packages+=(wrk mitmproxy hyperfine python3-aiohttp)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js may come from outside Debian's packages (a preinstalled node); then npm is there too.
if command -v node >/dev/null && command -v npm >/dev/null; then
  filtered=()
  for p in "${missing[@]}"; do [[ "$p" == nodejs || "$p" == npm ]] || filtered+=("$p"); done
  missing=("${filtered[@]+"${filtered[@]}"}")
fi
if (( ${#missing[@]} )); then
  echo "retrace: installing missing packages: ${missing[*]}" >&2
  sudo=""; [[ $(id -u) == 0 ]] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
