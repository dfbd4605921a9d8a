#!/usr/bin/env bash
# ShareGPT as it is usually published: one JSON array on one line, here ~55 MB. `import` tells its
# format from the first 64 KiB (it once read the whole line to look at its first byte) and reads
# the conversations one at a time: every one imported, in memory far below the file's size, and
# the same trace as with --from sharegpt.
. "$(dirname "$0")/lib.sh"

python3 - "$WORK/sharegpt.json" <<'PY'
import json, random, sys
rng = random.Random(8)
words = "the of and to a in is it you that he was for on are with as his they be at one have".split()
def text(n):
    return " ".join(rng.choice(words) for _ in range(n))
with open(sys.argv[1], "w") as out:
    out.write("[")
    for i in range(30000):
        if i:
            out.write(", ")
        out.write(json.dumps({"id": "c%d" % i, "conversations": [
            {"from": "human", "value": text(250)}, {"from": "gpt", "value": text(250)}]}))
    out.write("]")
PY
check_eq "$(wc -l <"$WORK/sharegpt.json")" 0 "the file is one line (no newline at all)"
size_mb=$(( $(stat -c %s "$WORK/sharegpt.json") >> 20 ))
(( size_mb >= 50 )) || fail "the generated file is only $size_mb MB"

auto_mb=$(peak_rss_mb /dev/null "$WORK/auto.err" "$RETRACE" import "$WORK/sharegpt.json" --out "$WORK/auto.rtrace")
named_mb=$(peak_rss_mb /dev/null "$WORK/named.err" "$RETRACE" import "$WORK/sharegpt.json" --from sharegpt --out "$WORK/named.rtrace")
echo "peak RSS of import: $auto_mb MB told from the file, $named_mb MB with --from sharegpt ($size_mb MB file)"
check_contains "$WORK/auto.err" "imported 30000 requests in 30000 sessions" "every conversation imported"
check_contains "$WORK/auto.err" "(sharegpt)" "the format told from the file"
# Memory does not follow the file: telling the format costs what --from costs, give or take
# 16 MB of allocator noise, and both stay under half the file.
(( auto_mb <= named_mb + 16 )) || fail "telling the format took $auto_mb MB, --from sharegpt $named_mb MB"
(( auto_mb * 2 < size_mb )) || fail "import took $auto_mb MB for a $size_mb MB file"
check_eq "$("$RETRACE" export "$WORK/auto.rtrace" | tail -n +2 | md5sum)" \
  "$("$RETRACE" export "$WORK/named.rtrace" | tail -n +2 | md5sum)" "the same exchanges either way"
echo ok
