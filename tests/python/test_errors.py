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
    torn = tmp_path / "torn.rtrace"
    shutil.copy(runs / "c1.rtrace", torn)
    size = torn.stat().st_size
    with open(torn, "r+b") as out:
        out.truncate(size * 2 // 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frame = retrace.open(str(torn)).exchanges()
    assert 0 < len(frame) < 32
    said = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(said) == 1 and "torn tail" in said[0], said
    cli = run("export", torn)
    assert said[0].split(": ", 1)[1] in cli.stderr, (said, cli.stderr)
