# Shared helpers for the production-size tier (tests/production, ctest label `production`,
# release build only): the e2e helpers, plus generators of data at the sizes real traffic has,
# made at run time (nothing big is checked in; public_traces.py makes the public serving traces,
# client.py is the real client that posts requests through record),
# and peak_rss_mb, the memory bound's measure. Source it first thing:
#   . "$(dirname "$0")/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../e2e/lib.sh"

# words_jsonl OUT COUNT BYTES [FIELDS_JSON]: COUNT chat requests, one a line, each a user message
# of about BYTES bytes of the simulator's own words (so its tokenizer reads one token a word),
# different in every request; FIELDS_JSON (an object) is merged into every request body.
words_jsonl() {
  python3 - "$@" <<'PY'
import json, random, sys
out, count, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
fields = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
words = ("the of and to a in is it you that he was for on are with as his they be at one have "
         "this from or had by not word but what some we can out other were all there when up use "
         "your how said an each she which do their time if will way about many then them write "
         "would like so these her long make thing see him two has look more day could go come did "
         "number sound no most people my over know water than call first who may down side been").split()
rng = random.Random(28)
with open(out, "w") as f:
    for i in range(count):
        text, n = ["request %d:" % i], 0
        while n < size:
            w = rng.choice(words)
            text.append(w)
            n += len(w) + 1
        body = {"messages": [{"role": "user", "content": " ".join(text)}]}
        body.update(fields)
        f.write(json.dumps({"request": body, "id": "p%d" % i}) + "\n")
PY
}

# completed FILE.json: the "completed" count of a `replay --json` summary.
completed() { jq -r .completed "$1"; }

# peak_rss_mb OUT ERR CMD...: runs CMD (its stdout to OUT, its stderr to ERR) and prints its peak
# resident set in MB (getrusage of the child); fails the test when CMD exits above 1 (1: "differs",
# "some requests failed", which the caller checks).
peak_rss_mb() {
  python3 -c 'import resource, subprocess, sys
code = subprocess.call(sys.argv[3:], stdout=open(sys.argv[1], "w"), stderr=open(sys.argv[2], "w"))
if code > 1: sys.exit("%s exited %d (its errors: %s)" % (" ".join(sys.argv[3:5]), code, sys.argv[2]))
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)' "$@"
}
