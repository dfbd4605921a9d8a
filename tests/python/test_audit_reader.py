"""exchanges()' sampling columns are sweep::AuditReader's values of each request body made numbers
by the module (python/audit_reader.cpp); they must be what the audit's JSON text of them reads
back as (AuditReader::body, what `study` prints): crafted bodies for each rule (scopes and their
order, paths, null, duplicates, numbers of every kind, text around the object, broken JSON), then
20,000 generated ones. That the audit reads what a whole parse would is
tests/study_audit_test.cpp's."""
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
