"""retrace.diff: one row per pair and the summary, computed by diff/'s engine; checked against
`retrace diff --json` on the same two runs (serve --batch-variance at concurrency 1 and 32, so
some outputs differ and some do not)."""
import json
import math

import pandas
import retrace

from conftest import run


def test_diff_has_a_row_per_pair_and_the_counts_retrace_diff_prints(runs):
    baseline, candidate = str(runs / "c1.rtrace"), str(runs / "c32.rtrace")
    pairs, summary = retrace.diff(baseline, candidate)
    cli = json.loads(run("diff", "--json", baseline, candidate, check=False).stdout)["runs"][0]
    for key in ("aligned", "identical", "divergent", "near_ties", "real_changes", "unknown_changes", "errors",
                "missing_in_candidate", "missing_in_baseline", "not_compared", "alignment", "matrix", "differ",
                "differ_rate_upper95"):
        assert summary[key] == cli[key], key
    assert 0 < summary["divergent"] < summary["aligned"] == 32, "batch variance changed some outputs, not all"
    assert len(pairs) == 32
    assert pairs["identical"].sum() == summary["identical"]
    assert (pairs["verdict"] == "divergent").sum() == summary["divergent"]
    assert pairs[pairs["identical"]]["first_divergent_token"].isna().all()
    divergent = pairs[pairs["verdict"] == "divergent"].set_index("candidate_id")
    assert len(divergent) == len(cli["pairs"])
    for pair in cli["pairs"]:
        mine = divergent.loc[pair["candidate_id"]]
        first = pair["divergences"][0]
        assert mine["baseline_id"] == pair["baseline_id"]
        assert mine["first_divergent_token"] == first["baseline_index"]
        assert mine["byte"] == first["byte_offset"]
        assert mine["part"] == "answer"
        assert mine["classification"] == first["classification"]
        assert mine["near_tie"] == (first["classification"] == "near_tie")
        assert mine["real_change"] == (first["classification"] == "real_change")
        assert math.isclose(mine["margin"], first["margin"], rel_tol=1e-6, abs_tol=1e-9)
        assert mine["baseline_token"] == first["baseline_token"]["text"]
        assert mine["candidate_token"] == first["candidate_token"]["text"]
        for side in ("baseline", "candidate"):
            want = first[f"{side}_token"]["id"]
            assert (mine[f"{side}_token_id"] == want) if want is not None else pandas.isna(mine[f"{side}_token_id"])


def test_diff_of_a_run_with_itself_is_identical_throughout(runs):
    pairs, summary = retrace.diff(str(runs / "c1.rtrace"), str(runs / "c1.rtrace"))
    assert summary["identical"] == 32 and summary["divergent"] == 0 and summary["failing"] == 0
    assert pairs["identical"].all() and len(pairs) == 32


def test_an_unknown_matcher_is_refused_with_the_words_diff_uses(runs):
    try:
        retrace.diff(str(runs / "c1.rtrace"), str(runs / "c1.rtrace"), match="fuzzy")
    except ValueError as error:
        assert "unknown match 'fuzzy'; use exact, normalized, contains, regex:RE or json:FIELD" in str(error)
    else:
        raise AssertionError("match='fuzzy' was accepted")
