"""A functional run killed with SIGKILL in the middle of a step resumes in a fresh process from
its FileCheckpointStorage: the steps that had completed are not called again, the interrupted
step runs again exactly once, and the plain code between steps runs again (``crash_app.py``).
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from workflows import FileCheckpointStorage
from workflows.functional import read_steps

HERE = Path(__file__).parent


def crash_app(command: str, folder: Path, *, hang: bool) -> subprocess.Popen[str]:
    env = {**os.environ, "CRASH_APP_HANG": "1" if hang else "0"}
    return subprocess.Popen(
        [sys.executable, "-c", "import crash_app; crash_app.main()", command, str(folder)],
        cwd=HERE,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(path: Path, process: subprocess.Popen[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if process.poll() is not None:
            raise AssertionError(f"the app ended before {path.name}: {process.stderr.read()}")  # type: ignore[union-attr]
        if time.monotonic() > deadline:
            raise AssertionError(f"{path.name} did not appear within {timeout} s")
        time.sleep(0.02)


def calls(folder: Path) -> Counter[str]:
    return Counter((folder / "calls.log").read_text().split())


@pytest.mark.slow
async def test_a_run_killed_mid_step_resumes_without_calling_completed_steps_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    killed = crash_app("start", tmp_path, hang=True)
    try:
        wait_for(tmp_path / "charge.started", killed)
        killed.send_signal(signal.SIGKILL)
        assert killed.wait(timeout=60) == -signal.SIGKILL
    finally:
        if killed.poll() is None:
            killed.kill()
        killed.communicate()
    assert calls(tmp_path) == {"fetch_order": 1, "plain": 1, "charge": 1}

    resumed = crash_app("resume", tmp_path, hang=False)
    out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err

    assert json.loads(out) == {"outputs": ["charged 42.50 for order-42"], "state": "IDLE"}
    # fetch_order's saved result came back; charge ran again once; plain code ran again.
    assert calls(tmp_path) == {"fetch_order": 1, "plain": 2, "charge": 2, "notify": 1}

    # Reading the results needs the app's types, as a dashboard that registered it has them.
    monkeypatch.syspath_prepend(str(HERE))
    importlib.import_module("crash_app")
    storage = FileCheckpointStorage(tmp_path / "checkpoints")
    latest = await storage.get_latest(workflow_name="order-pipeline")
    assert latest is not None
    steps = [(s.step, s.status) for s in read_steps(latest)]
    assert steps == [("fetch_order", "replayed"), ("charge", "computed"), ("notify", "computed")]
    lineage = {c.run_id for c in await storage.list_checkpoints(workflow_name="order-pipeline")}
    assert len(lineage) == 1  # the resume carried the killed run on, not a new one
