"""exchanges()' sampling and cached_tokens columns come from one-pass readers of each request body
and response (python/audit_reader.cpp, no JSON tree); they must give what the study audit's parse
gives (sweep::audit_body, sweep::cached_tokens_of): crafted texts for each rule (scopes and their
order, paths, null, duplicates, numbers of every kind, text around the object, broken JSON, the
events looked at), then 20,000 generated bodies and 20,000 generated responses."""
import json
import math
import random

import retrace

FIELDS = ["temperature", "top_p", "top_k", "seed", "n"]


def same(a, b):
    return all((x is None and y is None) or (isinstance(x, float) and isinstance(y, float) and math.isnan(x)
                                             and math.isnan(y)) or x == y for x, y in zip(a, b))


def check(body):
    fast, audited = retrace._sampling_as_sent(body), retrace._sampling_audited(body)
    assert same(fast, audited), f"{body!r}: reader {fast}, audit {audited}"


CRAFTED = [
    '{"temperature":0,"top_p":0.7,"top_k":40,"seed":42,"n":1}',
    '{"temperature":0.7,"top_p":1e-3,"top_k":40.0,"seed":42.5,"n":1e20}',
    '{"temperature":-0.0,"seed":-0,"n":-3,"top_k":9223372036854775807,"top_p":18446744073709551615}',
    '{"seed":9223372036854775808,"top_k":-9223372036854775808,"n":-9.223372036854775808e18}',
    '{"temperature":1e400,"top_p":-1e400,"seed":1e400}',
    '{"temperature":"0.7","top_p":true,"top_k":[1],"seed":{"a":1},"n":null}',
    '{"sampling_params":{"temperature":0.5,"top_k":3},"temperature":null}',
    '{"sampling_params":{"temperature":0.5},"temperature":0.2}',
    '{"parameters":{"temperature":0.5,"seed":7},"sampling_params":{"temperature":0.1}}',
    '{"parameters":{"seed":7},"sampling_params":{"seed":null}}',
    '{"sampling_params":{"seed":1},"sampling_params":5}',
    '{"sampling_params":5,"sampling_params":{"seed":1}}',
    '{"sampling_params":[{"seed":1}],"parameters":{"x":{"seed":3},"seed":4}}',
    '{"temperature":0.1,"temperature":0.9,"seed":1,"seed":null}',
    '{"nested":{"temperature":0.3},"messages":[{"temperature":1}],"temperature":0.4}',
    '{"sampling_params":{"sampling_params":{"seed":5}},"parameters":{"parameters":{"seed":6}}}',
    '{"temp\\u0065rature":0.25,"s\\u0065ed":3}',
    'data: {"temperature":0.5} trailing',
    'x}{"temperature":0.5}',
    '{"temperature":0.5}}',
    '{"temperature":0.5',
    '{"temperature":0.5,}',
    '{"temperature":01}',
    '{"prompt":"\xff","temperature":0.5}',
    '[{"temperature":0.5}]',
    '{}',
    '',
    'not json',
    '{"a":' * 40 + '1' + '}' * 40,
    '{"a":' * 31 + '{"temperature":1}' + '}' * 31,
    '{"temperature":0.5 /* c */}',
    '{"prompt":"' + "x" * 200_000 + '","temperature":0.3,"seed":11}',
]


def test_the_reader_gives_the_audit_s_values_on_crafted_bodies():
    for body in CRAFTED:
        check(body)


def value(rng, depth):
    kind = rng.randrange(12 if depth < 3 else 8)
    if kind == 0: return None
    if kind == 1: return rng.choice([True, False])
    if kind == 2: return rng.randrange(-2**70, 2**70)
    if kind == 3: return rng.randrange(-5, 100)
    if kind == 4: return rng.choice([0.0, -0.0, 0.7, 1e-300, 1.5e300, 42.0, 2.0**63, -2.0**63, rng.uniform(-1e6, 1e6)])
    if kind == 5: return rng.choice(["0.7", "", "t\u00e9", "\"q\""])
    if kind in (6, 7): return float(rng.randrange(-10, 10))
    if kind in (8, 9): return {key(rng): value(rng, depth + 1) for _ in range(rng.randrange(4))}
    return [value(rng, depth + 1) for _ in range(rng.randrange(3))]


def key(rng):
    return rng.choice(FIELDS + ["sampling_params", "parameters", "prompt", "x"])


def body(rng):
    pairs = [(key(rng), value(rng, 1)) for _ in range(rng.randrange(8))]
    text = "{" + ",".join(f"{json.dumps(k)}:{json.dumps(v)}" for k, v in pairs) + "}"  # duplicates kept
    return rng.choice(["", "data: "]) + text


def test_the_reader_gives_the_audit_s_values_on_generated_bodies():
    rng = random.Random(45)
    for _ in range(20_000):
        check(body(rng))


def outcome(read, *args):  # the count, or the error raised (the audit's to_number refuses 7.0)
    try:
        return read(*args)
    except RuntimeError as error:
        return f"raised {error}"


def check_cached(streamed, body, events):
    fast = outcome(retrace._cached_tokens, streamed, body, events)
    audited = outcome(retrace._cached_tokens_audited, streamed, body, events)
    assert fast == audited, f"{streamed} {body!r} {events!r}: reader {fast}, audit {audited}"


USAGE = '{"usage":{"prompt_tokens":11,"prompt_tokens_details":{"cached_tokens":%s}}}'
CACHED = [
    USAGE % "7", USAGE % "null", USAGE % "\"7\"", USAGE % "7.0", USAGE % "-2",
    '{"meta_info":{"cached_tokens":5}}', '{"timings":{"cache_n":3,"prompt_n":9}}', '{"usage":{"cached_tokens":4}}',
    '{"usage":{"cached_tokens":4,"prompt_tokens_details":{"cached_tokens":6}}}',
    '{"usage":{"cached_tokens":4,"prompt_tokens_details":null},"timings":{"cache_n":2}}',
    '{"usage":{"prompt_tokens_details":{"cached_tokens":6}},"usage":{"cached_tokens":1}}',
    '{"usage":{"prompt_tokens_details":{"cached_tokens":6}},"usage":5}',
    '{"usage":[{"cached_tokens":1}],"x":{"usage":{"cached_tokens":2}}}',
    '{"usage":{"cached_tokens":true},"meta_info":{"cached_tokens":"5"},"timings":{"cache_n":8}}',
    'data: {"usage":{"cached_tokens":3}}\n\n', '{"usage":{"cached_tokens":3}', '{"cache":1}', '', 'cache',
]


def test_the_cached_tokens_reader_gives_the_audit_s_count():
    for text in CACHED:
        check_cached(False, text, [])
        check_cached(True, "", [text])
        check_cached(True, "", [text, "data: [DONE]\n\n"])
    for events in [["data: {\"a\":1}"] * 4 + [CACHED[0]], [CACHED[0]] + ["data: {\"a\":1}"] * 4,
                   [CACHED[0]] + ["data: {\"a\":1}"] * 3, [CACHED[0], "cache", "cache", "cache", "cache", "cache"],
                   [CACHED[5], '{"cache":{', '{"cache":1}', '{"cache":2}', CACHED[1]],
                   [CACHED[5], '{"cache":{', '{"cache":1}', '{"cache":2}'], []]:
        check_cached(True, "", events)


def test_the_cached_tokens_reader_gives_the_audit_s_count_on_generated_responses():
    rng = random.Random(46)
    keys = ["usage", "prompt_tokens_details", "cached_tokens", "meta_info", "timings", "cache_n", "x"]
    def tree(depth):
        if depth > 3 or rng.randrange(3) == 0:
            return rng.choice([None, 3, -1, 2**64 - 1, 7.0, "5", True, [1]])
        return {rng.choice(keys): tree(depth + 1) for _ in range(rng.randrange(4))}
    def text():
        pairs = [(rng.choice(keys), tree(1)) for _ in range(rng.randrange(4))]
        inner = ",".join(f"{json.dumps(k)}:{json.dumps(v)}" for k, v in pairs)
        return rng.choice(["", "data: "]) + "{" + inner + "}" + rng.choice(["", "\n\n", "}"])
    for _ in range(20_000):
        streamed = rng.randrange(2) == 0
        check_cached(streamed, text(), [text() for _ in range(rng.randrange(7))])
