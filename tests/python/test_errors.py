"""Errors are Python exceptions with the message the command line prints for the same input: a
path that does not exist, a file that is not a trace, a trace cut short (read, with a warning)."""
import shutil
import warnings

import pytest
import retrace

from conftest import run


def test_a_missing_path_raises_file_not_found_with_the_cli_message(tmp_path):
    missing = tmp_path / "nowhere.rtrace"
    with pytest.raises(FileNotFoundError) as error:
        retrace.open(str(missing))
    cli = run("stats", missing, check=False)
    assert cli.returncode == 2
    assert str(error.value) in cli.stderr
    with pytest.raises(FileNotFoundError):
        retrace.diff(str(missing), str(missing))


def test_a_file_that_is_not_a_trace_raises_trace_error_with_the_cli_message(tmp_path):
    bad = tmp_path / "notes.rtrace"
    bad.write_text("these are notes, not a trace\n" * 20)
    with pytest.raises(retrace.TraceError) as error:
        retrace.open(str(bad))
    cli = run("stats", bad, check=False)
    assert cli.returncode == 2
    assert cli.stderr.strip() == f"retrace: error: {error.value}"
    assert "is not a retrace trace" in str(error.value)


def test_a_torn_trace_gives_its_readable_exchanges_and_a_warning(runs, tmp_path):
    # The last segment of a set cut short, as a crashed recorder leaves it: the first segment's
    # exchanges are read, the torn tail is said.
    torn = tmp_path / "torn"
    shutil.copytree(runs / "segments", torn)
    last = torn / "000002.rtrace"
    with open(last, "r+b") as out:
        out.truncate(last.stat().st_size * 2 // 3)
    first = len(retrace.open(str(torn / "000001.rtrace")).exchanges())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frame = retrace.open(str(torn)).exchanges()
    assert first <= len(frame) < 64
    said = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(said) == 1 and "torn tail" in said[0], said
    cli = run("export", torn)
    assert said[0].split(": ", 1)[1] in cli.stderr, (said, cli.stderr)
