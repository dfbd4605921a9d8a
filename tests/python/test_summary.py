"""retrace.load_summary: a sweep directory `retrace sweep` wrote against `retrace serve`, read as
its summary (the dict summary.json holds) and its table (summary.csv); a directory without a
summary is refused, saying why."""
import csv
import json

import pytest
import retrace

from conftest import Listening, run


def test_load_summary_reads_what_the_sweep_wrote(runs, tmp_path):
    server = Listening("serve", "--listen", "127.0.0.1:0", "--latency-model", "off")
    try:
        run("sweep", runs / "source.rtrace", "--target", server.url, "--concurrency", "1,4",
            "--out", tmp_path / "sweep")
    finally:
        server.close()
    loaded = retrace.load_summary(str(tmp_path / "sweep"))
    assert loaded["summary"] == json.loads((tmp_path / "sweep" / "summary.json").read_text())
    rows = list(csv.DictReader(open(tmp_path / "sweep" / "summary.csv")))
    assert len(loaded["table"]) == len(rows) >= 2
    assert list(loaded["table"].columns) == list(rows[0].keys())
    assert loaded["exchanges"] is None, "a sweep writes no exchanges.csv (a study does)"


def test_a_directory_without_a_summary_is_refused_saying_why(tmp_path):
    with pytest.raises(FileNotFoundError) as error:
        retrace.load_summary(str(tmp_path))
    assert "has no summary.json" in str(error.value)
