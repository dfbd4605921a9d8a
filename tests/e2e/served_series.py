#!/usr/bin/env python3
"""A trace's /metrics series against its exchanges, for a trace that scraped `retrace serve`
(test-only): `served_series.py SERIES.jsonl EXCHANGES.jsonl COUNT` (`retrace export --metrics` and
`retrace export` of it). Asserts COUNT exchanges, the baseline scrape before the first send and
the last after the last send (the trace's one clock), `running` among the series, and the sim's
requests-served counter's increases adding up to COUNT (every request counted once), and each
exchange joined to the series (its "server_state": the sample at its send no later than the send;
at least half of them known, since one written before the baseline's answer arrived is not)."""
import json
import sys

series = [json.loads(line) for line in open(sys.argv[1])]
exchanges = [json.loads(line)["exchange"] for line in open(sys.argv[2]) if '"exchange"' in line]
count = int(sys.argv[3])
assert len(exchanges) == count, len(exchanges)
times = sorted({s["t_us"] for s in series})
sends = [e["actual_send_ns"] / 1000 for e in exchanges]
assert times and times[0] < min(sends) and times[-1] > max(sends), (times[:1], times[-1:], min(sends), max(sends))
served = [s for s in series if s.get("series", "").startswith("retrace_sim_requests_served_total")]
assert sum(s["value"] for s in served) == count, served
assert any(s.get("series") == "running" for s in series)
joined = [e["server_state"]["at_send"]["scrape_ns"] for e in exchanges if e.get("server_state")]
known = [(ns, e["actual_send_ns"]) for ns, e in zip(joined, exchanges) if ns is not None and ns >= 0]
assert len(known) * 2 >= count and all(ns <= send for ns, send in known), (known, count)
