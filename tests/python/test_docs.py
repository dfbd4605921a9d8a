"""docs/python.md as it stands: its sh blocks run with bash against `retrace serve
--batch-variance` (TARGET, as the README's blocks run), then its python blocks in order in one
namespace, in the same directory; every block must succeed and print."""
import contextlib
import io
import os
import pathlib
import re
import subprocess

from conftest import RETRACE, ROOT, Listening

DOC = ROOT / "docs" / "python.md"


def blocks(language):
    return re.findall(rf"^```{language}\n(.*?)^```$", DOC.read_text(), flags=re.S | re.M)


def test_the_guide_runs_as_written(tmp_path):
    sh, python = blocks("sh"), blocks("python")
    assert sh and len(python) >= 4, "the guide has its sh and python blocks"
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "retrace").symlink_to(RETRACE)
    (tmp_path / "traces").symlink_to(ROOT / "traces")
    server = Listening("serve", "--listen", "127.0.0.1:0", "--batch-variance")
    try:
        for block in sh:
            env = dict(os.environ, PATH=f"{tmp_path / 'bin'}:{os.environ['PATH']}", TARGET=server.url)
            done = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=tmp_path, env=env,
                                  capture_output=True, text=True)
            assert done.returncode == 0, f"the sh block failed:\n{block}\n{done.stderr}"
    finally:
        server.close()
    namespace = {}
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        for block in python:
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                exec(compile(block, str(DOC), "exec"), namespace)
            assert printed.getvalue().strip(), f"the python block printed nothing:\n{block}"
    finally:
        os.chdir(cwd)
    assert len(namespace["exchanges"]) == 20 and namespace["exchanges"]["ttft_ms"].notna().all()
    assert namespace["summary"]["aligned"] == 20
    assert len(namespace["chunks"]) > 0 and namespace["chunks"]["logprob"].notna().all()
