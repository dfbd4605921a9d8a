"""Fixtures of the Python module's tests: traces made by the real binary, replaying requests
against the real embedded server (`retrace serve`) on loopback, as the e2e tests make theirs.

Environment (tests/CMakeLists.txt sets it): RETRACE the binary under test, PYTHONPATH the
directory of the module built beside it.
"""
import json
import os
import pathlib
import selectors
import signal
import subprocess
import time

import pytest

RETRACE = os.environ.get("RETRACE", "retrace")
ROOT = pathlib.Path(os.environ.get("RETRACE_ROOT", pathlib.Path(__file__).resolve().parents[2]))


def run(*args, check=True, **kwargs):
    """Runs retrace with ARGS; the finished process (stdout and stderr as text)."""
    done = subprocess.run([RETRACE, *map(str, args)], capture_output=True, text=True, **kwargs)
    if check and done.returncode != 0:
        raise AssertionError(f"retrace {' '.join(map(str, args))} exited {done.returncode}: {done.stderr}")
    return done


class Listening:
    """A retrace command that prints "listening on URL" (serve, record), stopped on close()."""

    def __init__(self, *args):
        self.process = subprocess.Popen([RETRACE, *map(str, args)], stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)
        self.url = None
        selector = selectors.DefaultSelector()
        selector.register(self.process.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + 30
        while self.url is None:
            left = deadline - time.monotonic()
            if left <= 0 or self.process.poll() is not None:
                self.close()
                raise AssertionError(f"retrace {args[0]} did not print 'listening on' within 30 s")
            if selector.select(timeout=left):
                line = self.process.stdout.readline()
                if "listening on " in line:
                    self.url = line.split("listening on ", 1)[1].split()[0]

    def close(self):
        """SIGTERM, then the exit status (waited for, at most 30 s, then killed)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()


def wait_for(condition, what, seconds=30):
    """Polls CONDITION until true, at most SECONDS; fails naming WHAT."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {seconds} s")
        time.sleep(0.05)


def prompts(path, count):
    """COUNT greedy streamed completions with 5 logprobs each, as `retrace import` reads them."""
    with open(path, "w") as out:
        for i in range(count):
            request = {"model": "retrace-sim", "prompt": f"Question {i}: what should we do about the order?",
                       "max_tokens": 48, "temperature": 0, "ignore_eos": True, "logprobs": 5, "stream": True}
            out.write(json.dumps({"request": request}) + "\n")


@pytest.fixture(scope="session")
def runs(tmp_path_factory):
    """Two replays of 32 requests against `retrace serve --batch-variance`: one at concurrency 1
    with no latency model (batches of one), one at concurrency 32 (shared batches, so some outputs
    differ), and the source replayed twice through `retrace record` into a directory of two segments (SIGHUP
between the two)."""
    work = tmp_path_factory.mktemp("runs")
    prompts(work / "prompts.jsonl", 32)
    run("import", work / "prompts.jsonl", "--out", work / "source.rtrace", "--endpoint", "completions")
    alone = Listening("serve", "--listen", "127.0.0.1:0", "--latency-model", "off", "--batch-variance")
    varied = Listening("serve", "--listen", "127.0.0.1:0", "--batch-variance")
    try:
        run("replay", work / "source.rtrace", "--target", alone.url, "-c", 1, "-o", work / "c1.rtrace")
        run("replay", work / "source.rtrace", "--target", varied.url, "-c", 32, "-o", work / "c32.rtrace")
        recorder = Listening("record", "--upstream", alone.url, "--out", f"{work / 'segments'}/",
                             "--listen", "127.0.0.1:0", "--no-server-info")
        try:
            run("replay", work / "source.rtrace", "--target", recorder.url, "-c", 4, "-o", work / "through1.rtrace")
            recorder.process.send_signal(signal.SIGHUP)  # the open segment closes, the next opens
            wait_for(lambda: (work / "segments" / "000002.rtrace").exists(), "the segment after SIGHUP")
            run("replay", work / "source.rtrace", "--target", recorder.url, "-c", 4, "-o", work / "through2.rtrace")
        finally:
            status = recorder.close()
        assert status == 0, f"record exited {status}"
    finally:
        alone.close()
        varied.close()
    return work
