#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang-14, ASan + UBSan) and runs each for SECONDS (default
# 30), seeded from the repository's own samples (tests/data, traces/) and the corpus earlier runs
# grew (build/fuzz/corpus/TARGET, kept between runs). Prints executions and coverage per target;
# exits 1 when a target found a crash, a leak, undefined behaviour or an input that allocates past
# 2 GiB (the reproducer is left in build/fuzz/findings/).
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]   (every target of fuzz/CMakeLists.txt when none is named)
#        scripts/fuzz.sh --list                    (prints those targets, one a line)
# bench/fuzz.sh runs the same for hours.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
shift || true
# The one list of targets is fuzz/CMakeLists.txt's `set(targets ...)`: a target added there is
# run here (and by bench/fuzz.sh and scripts/test.sh) without a second list to forget.
all_targets() { sed -n '/^set(targets/,/)/p' fuzz/CMakeLists.txt | tr '()' '  ' | tr -s ' \n' '\n' | grep -vxE 'set|targets|'; }
if [[ $seconds == --list ]]; then all_targets; exit 0; fi
targets=("$@")
(( ${#targets[@]} )) || mapfile -t targets < <(all_targets)

# The build's output only when it fails: a failed build ended this script in silence (set -e),
# and scripts/test.sh then failed with no word of why.
if ! build_log=$(scripts/build.sh fuzz 2>&1); then
  # The compiler's errors, or the log's end when there are none (CMake's "Could NOT find ..."); each
  # pipeline `|| true`, or a grep that matches nothing ends the script here under pipefail.
  why=$(printf '%s\n' "$build_log" | grep -E -A8 'error:|Error|FAILED:' || true)
  [[ -n $why ]] || why=$(printf '%s\n' "$build_log" | tail -20)
  printf '%s\n' "$why" | head -60 >&2 || true
  echo "scripts/fuzz.sh: the fuzz build (clang-14, ASan + UBSan) failed; the lines above say why" >&2
  exit 1
fi
out=build/fuzz
mkdir -p "$out/findings"

seed() {  # seed TARGET FILE...: copies seed files into the target's corpus (by content hash)
  local target=$1; shift
  mkdir -p "$out/corpus/$target"
  local file
  for file in "$@"; do
    [[ -f "$file" ]] && cp "$file" "$out/corpus/$target/seed-$(sha1sum "$file" | cut -c1-16)"
  done
  return 0
}
shopt -s nullglob globstar
seed trace_reader traces/*.rtrace
seed sse tests/data/**/*.sse
seed decoder tests/data/**/*.sse tests/data/**/*.json
seed import traces/*.jsonl tests/data/*.jsonl
# decoder, each event a choice's "logprobs" value: first byte 16 completions, 17 chat (fuzz_decoder.cpp).
for body in '\x10{"tokens":["a","\\u00e9","bytes:\\\\xc3"],"token_logprobs":[-1,null,-2.5],"top_logprobs":[{"a":-1,"token_id:3":-2},null,{}],"text_offset":[0,1,2]}' \
            '\x11{"content":[{"token":"a","logprob":-1,"bytes":[97],"id":4,"top_logprobs":[{"token":"b","logprob":-2,"bytes":[98]},{"token":"token_id:9","logprob":-3}]},{"token":"\\u00e9b","logprob":-0.5}],"refusal":null}'; do
  printf "$body" >"$out/corpus/decoder/seed-$(printf "$body" | sha1sum | cut -c1-16)"
done
# fast_event: the first 50 events of each sample stream, first byte 0 (chat) or 1 (completions);
# fast_scan: the same events as they are.
mkdir -p "$out/corpus/fast_event" "$out/corpus/fast_scan"
for file in tests/data/**/*.sse; do
  n=0
  while IFS= read -r line && (( n < 50 )); do
    [[ $line == "data: {"* ]] || continue
    for d in 0 1; do
      { printf "\\x0$d"; printf '%s' "${line#data: }"; } >"$out/corpus/fast_event/seed-${file//\//-}-$n-$d"
    done
    printf '%s' "${line#data: }" >"$out/corpus/fast_scan/seed-${file//\//-}-$n"
    n=$((n + 1))
  done <"$file"
done
mkdir -p "$out/corpus/sim_request"
for body in '0{"prompt":"Hello","max_tokens":8,"temperature":0,"logprobs":2}' \
            '1{"messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true},"n":2}' \
            '2{"model":"m","prompt":"tokenize me"}'; do
  printf '%s' "$body" >"$out/corpus/sim_request/seed-$(printf '%s' "$body" | sha1sum | cut -c1-16)"
done
# trace_import: the first byte picks the format (its index in trace_formats(), or auto-detection);
# the rows are traces/README.md's examples, plain and compressed.
mkdir -p "$out/corpus/trace_import"
block=0
while IFS= read -r -d '' example; do
  for form in plain gz zst; do
    case $form in
      plain) body=$(printf '%s' "$example" | base64 -w0) ;;
      gz) body=$(printf '%s' "$example" | gzip -c | base64 -w0) ;;
      zst) body=$(printf '%s' "$example" | zstd -q -c | base64 -w0) ;;
    esac
    { printf "\\x$(printf %02x "$block")"; base64 -d <<<"$body"; } \
      >"$out/corpus/trace_import/seed-$block-$form"
    { printf '\x7f'; base64 -d <<<"$body"; } >"$out/corpus/trace_import/seed-auto-$block-$form"
  done
  block=$((block + 1))
done < <(awk '/^```$/{if (inside) {printf "%s", text; printf "%c", 0; text=""} inside=!inside; next}
              inside{text = text $0 "\n"}' traces/README.md)
# content_coding: the first byte picks the coding (gzip, deflate, br, zstd, ...), the second the split.
mkdir -p "$out/corpus/content_coding"
sample='data: {"choices":[{"text":" Paris"}]}'
{ printf '\x00\x07'; printf '%s' "$sample" | gzip -c; } >"$out/corpus/content_coding/seed-gzip"
{ printf '\x03\x05'; printf '%s' "$sample" | zstd -q -c; } >"$out/corpus/content_coding/seed-zstd"
{ printf '\x01\x03'; python3 -c 'import sys,zlib; sys.stdout.buffer.write(zlib.compress(sys.argv[1].encode()))' "$sample"; } \
  >"$out/corpus/content_coding/seed-deflate"
mkdir -p "$out/corpus/url"
for url in http://127.0.0.1:8000 https://api.example.com/v1 'http://[::1]:9/x/' 127.0.0.1:0; do
  printf '%s' "$url" >"$out/corpus/url/seed-$(printf '%s' "$url" | sha1sum | cut -c1-16)"
done

# http_head: heads with a field at Beast's 65,533-byte limit and one past it (first byte: the split).
mkdir -p "$out/corpus/http_head"
for n in 65533 65534; do
  { printf '\x10HTTP/1.1 200 OK\r\nX-Big: '; head -c "$n" /dev/zero | tr '\0' a; printf '\r\nContent-Length: 2\r\n\r\n{}'; } \
    >"$out/corpus/http_head/seed-response-$n"
  { printf '\x11POST /v1/x HTTP/1.1\r\nX-Big: '; head -c "$n" /dev/zero | tr '\0' a; printf '\r\n\r\n'; } \
    >"$out/corpus/http_head/seed-request-$n"
done
mkdir -p "$out/corpus/redaction"
for body in '{"model":"m","metadata":{"auth":{"id_token":"x"}},"api\\u005fkey":"k","max_tokens":5}' \
            '{"messages":[{"role":"user","content":"eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0."}]}' \
            'grant_type=x&refresh_token=r&client%5Fsecret=s'; do
  printf '%s' "$body" >"$out/corpus/redaction/seed-$(printf '%s' "$body" | sha1sum | cut -c1-16)"
done

status=0
printf '%-14s %12s %10s %8s %8s  %s\n' target executions exec/s cov features result
for target in "${targets[@]}"; do
  log="$out/findings/$target.log"
  # A target without seeds (export_import builds its inputs from any bytes) still needs its corpus
  # directory: libFuzzer refuses to start without it.
  mkdir -p "$out/corpus/$target"
  result=ok
  max_len=65536
  [[ $target == http_head ]] && max_len=300000  # past record's 256 KiB response header limit
  "$out/fuzz/fuzz_$target" "$out/corpus/$target" -max_total_time="$seconds" -rss_limit_mb=2048 \
    -timeout=20 -max_len="$max_len" -print_final_stats=1 -artifact_prefix="$out/findings/$target-" \
    >"$log" 2>&1 || { result="FOUND: see $log"; status=1; }
  runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo 0)
  rate=$(grep -oE 'stat::average_exec_per_sec: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo 0)
  # `|| true`: a target that never started prints no progress line, and under pipefail the failed
  # grep ended this script before its row and its message (a clean-clone CI run: export_import).
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  cov=$(grep -oE 'cov: [0-9]+' <<<"$last" | grep -oE '[0-9]+' || echo 0)
  ft=$(grep -oE 'ft: [0-9]+' <<<"$last" | grep -oE '[0-9]+' || echo 0)
  printf '%-14s %12s %10s %8s %8s  %s\n' "$target" "$runs" "$rate" "$cov" "$ft" "$result"
  [[ $result == ok ]] || grep -E 'ERROR|SUMMARY|==[0-9]+==' "$log" | head -5 >&2 || true
done
exit $status
