#!/usr/bin/env bash
# The .deb a user installs: cpack builds it from this build tree, `apt-get install ./retrace_*.deb`
# installs it, and the installed retrace (stripped, with its Depends from the libraries it links)
# runs the quick demo from an empty directory with nothing of the checkout, `man retrace` shows
# the page, bash-completion finds the completion, and `capnp decode` reads a trace with the
# installed schema. The package is removed afterwards, pass or fail. Release build only; needs
# root or password-less sudo, and skips (exit 77) saying so otherwise.
. "$(dirname "$0")/lib.sh"

skip() { echo "SKIP: $*"; exit 77; }
[[ "${RETRACE_SANITIZE:-OFF}" != ON ]] || skip "the package is made from the release build, not this sanitized one"
sudo=()
if [[ $(id -u) != 0 ]]; then
  sudo -n true 2>/dev/null || skip "installing a package needs root or password-less sudo"
  sudo=(sudo -n)
fi
for tool in cpack dpkg-shlibdeps help2man man apt-get flock; do
  command -v "$tool" >/dev/null || fail "$tool is missing; run scripts/deps.sh"
done
# One package test at a time on this machine (several checkouts may run their suites at once).
exec 9>"${TMPDIR:-/tmp}/retrace-package-test.lock"
flock -w 900 9 || fail "another package test held ${TMPDIR:-/tmp}/retrace-package-test.lock for 15 minutes"
if dpkg-query -W -f='${Status}' retrace 2>/dev/null | grep -q "install ok installed"; then
  skip "a retrace package is already installed here; this test does not replace it"
fi

build=$(dirname "$RETRACE")
cpack -G DEB --config "$build/CPackConfig.cmake" -B "$WORK/package" >"$WORK/cpack.log" 2>&1 ||
  { cat "$WORK/cpack.log" >&2; fail "cpack -G DEB failed"; }
debs=("$WORK"/package/retrace_*.deb)
[[ ${#debs[@]} == 1 && -f "${debs[0]}" ]] || fail "cpack made no single retrace_*.deb: ${debs[*]}"
deb=${debs[0]}
dpkg-deb --field "$deb" Depends >"$WORK/depends"
for library in libc6 libstdc++6 libzstd1 libssl3; do
  check_contains "$WORK/depends" "$library" "the package depends on the shared libraries it links"
done
dpkg-deb --contents "$deb" >"$WORK/contents"
for path in ./usr/bin/retrace ./usr/share/man/man1/retrace.1 ./usr/share/bash-completion/completions/retrace \
            ./usr/share/retrace/trace.capnp ./usr/share/retrace/traces/gold-intents.jsonl \
            ./usr/share/doc/retrace/README.md ./usr/share/doc/retrace/docs/recording.md \
            ./usr/share/doc/retrace/docs/report.png; do
  grep -qE " $path(\.gz)?\$" "$WORK/contents" || fail "the package lacks $path"
done
# Debian's policy: the man page gzipped, a copyright file, a description as written (no ';' from
# a CMake list).
grep -qE " ./usr/share/man/man1/retrace.1.gz\$" "$WORK/contents" || fail "the man page is not gzipped"
grep -qE " ./usr/share/doc/retrace/copyright\$" "$WORK/contents" || fail "the package has no copyright file"
dpkg-deb --field "$deb" Description >"$WORK/description"
grep -q ';' "$WORK/description" && fail "the package's description holds a stray ';': $(cat "$WORK/description")"

installed=no
remove_package() {
  [[ $installed == yes ]] || return 0
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq -o DPkg::Lock::Timeout=300 retrace \
    >"$WORK/remove.log" 2>&1 || { cat "$WORK/remove.log" >&2; echo "FAIL: apt-get remove retrace" >&2; }
  installed=no
}
trap 'remove_package; _cleanup' EXIT
installed=yes
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=300 "$deb" \
  >"$WORK/install.log" 2>&1 || { cat "$WORK/install.log" >&2; fail "apt-get install $deb failed"; }
check_eq "$(command -v retrace)" /usr/bin/retrace "the installed retrace is on PATH"
readelf -S /usr/bin/retrace | grep -q '\.debug_info' && fail "the installed binary keeps its debug info"
echo "installed binary: $(stat -c %s /usr/bin/retrace) bytes; package: $(stat -c %s "$deb") bytes"

# The demo from an empty directory, with a clean environment: the datasets are in the binary.
mkdir "$WORK/empty"
status=0
(cd "$WORK/empty" && env -i PATH=/usr/bin:/bin HOME="$WORK/empty" retrace demo --quick \
  >"$WORK/demo.out" 2>"$WORK/demo.err") || status=$?
[[ $status == 0 ]] || { tail -30 "$WORK/demo.err" >&2; fail "installed retrace demo --quick exit $status"; }
check_contains "$WORK/demo.out" "Recorded 20 exchanges" "the installed demo recorded the gold questions"
check_contains "$WORK/demo.out" "boundary: concurrency" "the installed demo ran to its bisect"
demo_dir=$(echo "$WORK"/empty/retrace-demo-*)
[[ -d "$demo_dir" ]] || fail "the demo wrote no retrace-demo-* directory in the current one"

check_contains <(retrace --version) "(commit " "the installed --version names the commit"
MANPAGER=cat MANWIDTH=120 man retrace >"$WORK/man.txt" 2>"$WORK/man.err" ||
  { cat "$WORK/man.err" >&2; fail "man retrace"; }
check_contains "$WORK/man.txt" "COMMANDS" "the man page holds every command's help"
check_contains "$WORK/man.txt" "--upstream" "the man page holds record's options"
check_contains "$WORK/man.txt" "GUIDES" "the man page lists the guides"
# `retrace help TOPIC` names the installed guide (README.md's links reach docs/ there too).
check_contains <(retrace help recording) "here: /usr/share/doc/retrace/docs/recording.md" "help names the installed guide"

completion=$(bash -c '. /usr/share/bash-completion/bash_completion
  __load_completion retrace || exit 3
  function=$(complete -p retrace | sed -E "s/.* -F ([^ ]+) .*/\1/")
  COMP_WORDS=(retrace replay --conc); COMP_CWORD=2; "$function" retrace --conc replay
  printf "%s\n" "${COMPREPLY[@]}"') || fail "bash-completion did not load the installed completion"
check_eq "$completion" "--concurrency" "the installed bash completion completes an option"

if command -v capnp >/dev/null && command -v zstd >/dev/null; then
  zstd -dc "$demo_dir/gold-recorded.rtrace" | capnp decode /usr/share/retrace/trace.capnp Record \
    >"$WORK/decoded" || fail "capnp decode with the installed schema"
  check_contains "$WORK/decoded" "exchange = (" "the installed schema decodes a recorded trace"
fi

# The Python module, when this build made one: in Debian's dist-packages, and Debian's python3
# imports it and reads the demo's recording as the installed binary counts it.
if compgen -G "$build/python/retrace.cpython-*.so" >/dev/null; then
  grep -qE " ./usr/lib/python3/dist-packages/retrace\.cpython-[^ ]*\.so\$" "$WORK/contents" ||
    fail "the package lacks the Python module in /usr/lib/python3/dist-packages"
  want=$(retrace inspect "$demo_dir/gold-recorded.rtrace" --json | jq .counts.exchanges)
  got=$(cd "$WORK/empty" && env -i PATH=/usr/bin:/bin HOME="$WORK/empty" /usr/bin/python3 -c \
    'import sys, retrace; print(len(retrace.open(sys.argv[1]).exchanges()))' "$demo_dir/gold-recorded.rtrace") ||
    fail "the installed module does not import or read with /usr/bin/python3"
  check_eq "$got" "$want" "the installed Python module reads the demo's recording"
fi

remove_package
[[ ! -e /usr/bin/retrace ]] || fail "apt-get remove left /usr/bin/retrace"
echo "ok"
