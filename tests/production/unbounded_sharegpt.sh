#!/usr/bin/env bash
# A 10 GB ShareGPT string inside a .json.gz (issue 46 item 6: before, std::bad_alloc at 3.85 GB).
# The file is 10 MB: gzip members of 16 MiB of "a" each, concatenated (they decode as one stream),
# never written out whole. `import --from sharegpt` refuses the conversation once it passes what one
# trace record holds (512 MiB), naming the file, the line and the conversation, exits 2, and its
# peak RSS stays bounded (the refused conversation's bytes and the decompressor).
. "$(dirname "$0")/lib.sh"

python3 - "$WORK/huge.json.gz" <<'PY'
import gzip, sys
block = gzip.compress(b"a" * (16 << 20), 9)
with open(sys.argv[1], "wb") as out:
    out.write(gzip.compress(b'[{"id": "big", "conversations": [{"from": "human", "value": "'))
    for _ in range(640):  # 640 x 16 MiB: a 10 GiB string
        out.write(block)
    out.write(gzip.compress(b'"}, {"from": "gpt", "value": "ok"}]}]'))
PY
echo "the gzip file: $(( $(stat -c %s "$WORK/huge.json.gz") >> 20 )) MiB"

status=0
/usr/bin/time -f '%M' -o "$WORK/import.kib" "$RETRACE" import --from sharegpt "$WORK/huge.json.gz" \
  --out "$WORK/out.rtrace" >/dev/null 2>"$WORK/import.err" || status=$?
check_eq "$status" 2 "import refuses the conversation"
check_contains "$WORK/import.err" "huge.json.gz:1: conversation 1 is longer than 512 MiB" \
  "the refusal names the file, the line and the conversation"
[[ ! -e "$WORK/out.rtrace" ]] || fail "a refused import left its output"
peak=$(( $(tail -1 "$WORK/import.kib") / 1024 ))
echo "import's peak RSS: $peak MiB"
(( peak < 1536 )) || fail "import's peak RSS is $peak MiB"
echo "PASS unbounded_sharegpt"
