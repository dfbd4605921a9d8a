"""The public serving traces in their published shapes, at their published row counts, made here
(nothing copied from a dataset; traces/README.md shows the shapes `retrace import` reads).

  python3 public_traces.py mooncake OUT FROM_S TO_S   the Mooncake trace (mooncake_trace.jsonl:
      23,608 rows over one hour, timestamps in ms, 512-token hash blocks sharing prefixes)
  python3 public_traces.py burstgpt OUT FROM_S TO_S   BurstGPT_1.csv (1,429.7k rows over its first
      two months, timestamps in whole seconds; ~1.8 % of rows failed in production: Response
      tokens 0, as the 1,404.3k rows of BurstGPT_without_fails_1.csv imply)

Prints one JSON object of what a reader should find, counted here independently of retrace:
the rows, those `import` keeps, the trace's span in ns, and the rows sent in the window
[FROM_S, TO_S) seconds of the trace's own clock.

The lengths are the one thing smaller than the published traces' (Mooncake's prompts are 1-3
blocks here, ~7.6k tokens on average there; BurstGPT's 1-48 tokens here, hundreds there): import
makes and stores each prompt, so the published lengths would make the test gigabytes of text;
the row counts, clocks and shapes are what planning, windows and inspect read.
"""
import json, random, sys

ROWS = {"mooncake": 23_608, "burstgpt": 1_429_700}


def mooncake(out, rows, rng):
    # About 6.6 rows a second over an hour, a third at their previous row's timestamp (a burst);
    # every prompt starts with one of 50 shared 512-token blocks, then 0-2 blocks of its own, so
    # len(hash_ids) = ceil(input_length / 512) as in the published trace.
    next_block, t, sent = 50, 0, []
    for _ in range(rows):
        blocks = [rng.randrange(50)]
        own = rng.randint(0, 2)
        blocks += range(next_block, next_block + own)
        next_block += own
        out.write(json.dumps({"timestamp": t, "input_length": own * 512 + rng.randint(1, 512),
                              "output_length": rng.randint(1, 64), "hash_ids": blocks}) + "\n")
        sent.append(t * 1_000_000)
        if rng.random() > 1 / 3:
            t += int(rng.expovariate(1 / 228))
    return sent


def burstgpt(out, rows, rng):
    out.write("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n")
    t, sent = 0.0, []
    for i in range(rows):
        second = int(t)
        model = "GPT-4" if rng.random() < 0.2 else "ChatGPT"
        log = "API log" if rng.random() < 0.3 else "Conversation log"
        request = rng.randint(1, 48)
        # Failed in production (import leaves these out); never the first row, which sets zero.
        response = 0 if i and rng.random() < 0.018 else rng.randint(1, 32)
        out.write("%d,%s,%d,%d,%d,%s\n" % (second, model, request, response, request + response, log))
        if response:
            sent.append(second * 1_000_000_000)
        t += rng.expovariate(1 / 3.69)  # 1,429.7k rows over ~61 days
    return sent


def main():
    kind, path, window_from, window_to = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    rng = random.Random(2028)
    with open(path, "w") as out:
        sent = {"mooncake": mooncake, "burstgpt": burstgpt}[kind](out, ROWS[kind], rng)
    start, end = window_from * 1_000_000_000, window_to * 1_000_000_000
    print(json.dumps({"rows": ROWS[kind], "kept": len(sent), "span_ns": sent[-1] - sent[0],
                      "in_window": sum(1 for s in sent if start <= s < end)}))


main()
