"""The Python module at production size: BurstGPT_1.csv's 1,429.7k rows (public_traces.py makes
them, as production.public_traces does) imported by the real binary into one trace, read by
retrace.open(...).exchanges() into a DataFrame of one row per exchange (every kept row, ids in
order, the figures of an unsent plan absent, not zero), in a child process whose peak RSS is
bounded per row. Outcomes are counted, never timed; the time is bench/RESULTS.md's ("The Python
module"). release-only: the module is built in the release flavour only."""
import json
import os
import pathlib
import subprocess
import sys

from conftest import RETRACE, run

HERE = pathlib.Path(__file__).resolve().parent
# Peak RSS of the child over its rows: the columns (~0.3 KB a row, the request key a str of 32
# hex digits the largest) and the interpreter with NumPy and pandas (~60 MB); measured 0.4 KB a
# row (bench/RESULTS.md). The bound leaves room, and fails if a row ever costs a kilobyte.
BOUND_BYTES_PER_ROW = 1000
BASE_MB = 120

CHILD = r"""
import json, resource, sys
import retrace
frame = retrace.open(sys.argv[1]).exchanges()
print(json.dumps({
    "rows": len(frame),
    "ids_in_order": bool((frame["id"].diff().dropna() > 0).all()),
    "unsent": int(frame["status"].isna().sum()),
    "ttft_absent": int(frame["ttft_ms"].isna().sum()),
    "prompt_tokens_absent": int(frame["prompt_tokens"].isna().sum()),
    "endpoints": sorted(set(frame["endpoint"])),
    "peak_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
}))
"""


def test_a_million_exchanges_into_a_dataframe_in_bounded_memory(tmp_path):
    csv = tmp_path / "BurstGPT_1.csv"
    want = json.loads(subprocess.run([sys.executable, HERE / "public_traces.py", "burstgpt", csv, "0", "1"],
                                     capture_output=True, text=True, check=True).stdout)
    trace = tmp_path / "burstgpt.rtrace"
    run("import", csv, "--out", trace)
    csv.unlink()
    kept = want["kept"]
    assert kept >= 1_000_000
    child = subprocess.run([sys.executable, "-c", CHILD, trace], capture_output=True, text=True,
                           env=dict(os.environ))
    assert child.returncode == 0, child.stderr
    got = json.loads(child.stdout)
    print(f"{got['rows']} rows, peak RSS {got['peak_kb'] / 1024:.0f} MiB "
          f"({(got['peak_kb'] * 1024 - BASE_MB * 2**20) / got['rows']:.0f} bytes a row over {BASE_MB} MiB)")
    assert got["rows"] == kept
    assert got["ids_in_order"]
    assert got["unsent"] == kept and got["ttft_absent"] == kept, "an imported plan has no response: absent, not 0"
    assert got["endpoints"] == ["/v1/chat/completions"]
    assert got["peak_kb"] * 1024 <= BASE_MB * 2**20 + BOUND_BYTES_PER_ROW * kept, got
