"""retrace.open: the header, exchanges(), chunks() and metrics() of traces the real binary made,
checked against what the command line prints of the same traces (export, export --csv,
export --metrics), so a table that drifts from the commands' figures fails."""
import csv
import io
import json
import math

import numpy
import pandas
import retrace

from conftest import run


def export(path):
    """`retrace export PATH`'s exchanges by id."""
    exchanges = {}
    for line in run("export", path).stdout.splitlines():
        record = json.loads(line)
        if "exchange" in record:
            exchanges[record["exchange"]["id"]] = record["exchange"]
    return exchanges


def close(a, b, tolerance=1e-3):
    if a in ("", None) or (isinstance(a, float) and math.isnan(a)):
        return b in ("", None) or (isinstance(b, float) and math.isnan(b))
    return abs(float(a) - float(b)) <= tolerance


def test_the_header_says_what_the_trace_header_says(runs):
    trace = retrace.open(str(runs / "c1.rtrace"))
    header = trace.header
    assert header["source"] == "replayed"
    exported = json.loads(run("export", runs / "c1.rtrace").stdout.splitlines()[0])["header"]
    assert (header["format_major"], header["format_minor"]) == (exported["format_major"], exported["format_minor"])
    assert header["settings"] == json.loads(exported["settings"])
    assert header["settings"]["schedule"]["concurrency"] == 1
    assert header["target"].startswith("http://127.0.0.1:")


def test_exchanges_has_one_row_per_exchange_with_the_figures_export_csv_prints(runs):
    path = runs / "c32.rtrace"
    frame = retrace.open(str(path)).exchanges()
    rows = list(csv.DictReader(io.StringIO(run("export", path, "--csv").stdout)))
    assert len(frame) == len(rows) == 32
    records = [json.loads(line) for line in run("export", path).stdout.splitlines()]
    exported = {r["exchange"]["id"]: r["exchange"]["key"] for r in records if "exchange" in r}
    by_id = frame.set_index("id")
    for row in rows:
        mine = by_id.loc[int(row["id"])]
        assert mine["status"] == int(row["status"])
        assert close(mine["ttft_ms"], row["ttft_ms"]), (mine["ttft_ms"], row["ttft_ms"])
        assert close(mine["tpot_ms"], row["tpot_ms"])
        assert close(mine["e2e_ms"], row["e2e_ms"])
        assert close(mine["send_ms"], row["send_ms"])
        assert mine["output_tokens"] == int(row["output_tokens"])
        assert mine["prompt_tokens"] == int(row["input_tokens"])
        assert mine["request_key"] == exported[int(row["id"])], "the request key export prints"
        assert mine["session"] == row["session_id"] or (row["session_id"] == "" and mine["session"] == "")
    # Columns are typed arrays, not Python objects per row (strings aside).
    assert frame["ttft_ms"].dtype == numpy.float64
    assert frame["id"].dtype == numpy.uint64
    assert str(frame["output_tokens"].dtype) == "Int64"
    assert isinstance(frame["endpoint"].dtype, pandas.CategoricalDtype)
    assert frame["request_key"].dtype == object
    assert set(frame["endpoint"]) == {"/v1/completions"}
    assert set(frame["error_kind"]) == {"none"}
    assert (frame["temperature"] == 0).all(), "the sampling as sent: temperature 0"
    assert frame["top_p"].isna().all(), "top_p was not sent"
    assert frame["streamed"].all()
    assert (frame["itl_p50_ms"] <= frame["itl_p99_ms"]).all()
    assert (frame["in_flight_at_send"] >= 1).all() and (frame["in_flight_max"] >= frame["in_flight_at_send"]).all()


def test_itl_percentiles_are_the_nearest_rank_of_the_token_gaps(runs):
    path = runs / "c32.rtrace"
    frame = retrace.open(str(path)).exchanges().set_index("id")
    for exchange_id, exchange in export(path).items():
        offsets = sorted({token["offset_ns"] for choice in exchange["choices"] for token in choice["tokens"]})
        gaps = sorted((b - a) / 1e6 for a, b in zip(offsets, offsets[1:]))
        if not gaps:
            assert math.isnan(frame.loc[exchange_id, "itl_p50_ms"])
            continue
        rank = lambda p: gaps[max(1, math.ceil(p / 100 * len(gaps))) - 1]
        assert abs(frame.loc[exchange_id, "itl_p50_ms"] - rank(50)) < 1e-6
        assert abs(frame.loc[exchange_id, "itl_p99_ms"] - rank(99)) < 1e-6


def test_chunks_has_every_token_with_its_id_text_logprob_and_margin(runs):
    path = runs / "c1.rtrace"
    chunks = retrace.open(str(path)).chunks()
    exported = export(path)
    tokens = [(exchange_id, choice, token) for exchange_id, exchange in exported.items()
              for choice in exchange["choices"] for token in choice["tokens"]]
    assert len(chunks) == len(tokens) == 32 * 48
    assert chunks["token_id"].dtype == "Int64" and chunks["logprob"].dtype == numpy.float64
    for row, (exchange_id, choice, token) in zip(chunks.itertuples(), tokens):
        assert row.exchange_id == exchange_id and row.part == choice.get("part", "content")
        assert row.text == token["bytes"]
        assert abs(row.offset_us - token["offset_ns"] / 1e3) < 1e-6
        assert abs(row.logprob - token["logprob"]) < 1e-6
        others = [alternative["logprob"] for alternative in token["top"]
                  if alternative["bytes"] != token["bytes"]]
        if others:
            assert abs(row.margin - (token["logprob"] - max(others))) < 1e-5
        else:
            assert math.isnan(row.margin)
    one = retrace.open(str(path)).chunks(ids=[3])
    assert len(one) == 48 and set(one["exchange_id"]) == {3}


def test_a_directory_of_segments_reads_as_one_trace(runs):
    segments = sorted((runs / "segments").glob("*.rtrace"))
    assert len(segments) == 2
    frame = retrace.open(str(runs / "segments")).exchanges()
    assert len(frame) == 64
    assert frame["id"].is_unique, "ids go on across segments"
    keys = frame["request_key"].tolist()
    assert len({id(k) for k in keys}) == len(set(keys)) < len(keys), "a str a distinct key, shared by its rows"
    records = [json.loads(line) for segment in segments for line in run("export", segment).stdout.splitlines()]
    assert sorted(keys) == sorted(r["exchange"]["key"] for r in records if "exchange" in r), "the keys export prints"
    ids_cli = sorted(export(runs / "segments"))
    assert sorted(frame["id"].tolist()) == ids_cli
    first = retrace.open(str(segments[0])).exchanges()
    assert 0 < len(first) < 64


def test_metrics_are_the_series_export_metrics_prints(runs):
    path = runs / "c32.rtrace"
    series = retrace.open(str(path)).metrics()
    rows = list(csv.DictReader(io.StringIO(run("export", path, "--metrics", "--csv").stdout)))
    rows = [row for row in rows if row["series"] != "client_in_flight"]
    assert len(rows) > 0, "the replay scraped serve's /metrics"
    values = series.dropna(subset=["value"])
    assert len(values) == len(rows)
    for row, mine in zip(rows, values.itertuples()):
        assert mine.series == row["series"] and mine.kind == row["kind"]
        assert abs(mine.value - float(row["value"])) <= 1e-9 * max(1, abs(mine.value))
        assert abs(mine.offset_ms * 1e3 - float(row["t_us"])) < 1.0
    assert "running" in set(values["series"])


def test_a_trace_without_scrapes_has_an_empty_metrics_table(runs):
    series = retrace.open(str(runs / "source.rtrace")).metrics()
    assert len(series) == 0 and "value" in series.columns
