"""dashboard/instruments/processes.py and observability/exporter.py: real processes sharing one
``PROMETHEUS_MULTIPROC_DIR``, summed in one scrape, with the live gauges of a killed process,
an exited one and a Celery child dropped; and the exporter of a host that runs only workers.
"""

from __future__ import annotations

import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from celery.signals import worker_process_shutdown
from django.core.management import CommandError, call_command

from dashboard.instruments import metrics, processes
from tests.dashboard.observability.test_metrics import TOKEN, parse, scrape, value

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def metrics_token(settings: Any) -> None:
    settings.SUPERSTEP_METRICS_TOKEN = TOKEN


# ------------------------------------------------------------------------- several processes

# What a Daphne or Celery process does: record, then stay up, exit, or be killed.
RECORDER = """
import os, sys
from dashboard.instruments import metrics
size, seconds, end = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
metrics.checkpoint_committed("shared-flow", size, seconds)
metrics.lease_taken_over("shared-flow", by="worker")
metrics.attempt_started("shared-flow")
print("recorded", flush=True)
if end == "killed":
    os._exit(0)  # no atexit, as after SIGKILL or a Celery child's exit
sys.stdin.readline()
"""


@pytest.fixture
def multiproc_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The directory the test's processes share; this process scrapes it."""
    path = tmp_path / "prometheus"
    path.mkdir()
    monkeypatch.setenv(processes.VARIABLE, str(path))
    return path


@pytest.fixture
def recorders(
    multiproc_dir: Path, subprocess_env: Callable[..., dict[str, str]]
) -> Iterator[Callable[..., subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []

    def start(size: int, seconds: float, end: str) -> subprocess.Popen[str]:
        child = subprocess.Popen(
            [sys.executable, "-c", RECORDER, str(size), str(seconds), end],
            cwd=ROOT,
            env=subprocess_env(**{processes.VARIABLE: str(multiproc_dir)}),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        started.append(child)
        assert child.stdout is not None
        assert child.stdout.readline() == "recorded\n"
        return child

    yield start
    for child in started:
        if child.poll() is None:
            child.kill()
        child.communicate(timeout=30)  # also closes the pipes


def _live_gauge_files(path: Path, pid: int) -> list[Path]:
    return sorted(path.glob(f"gauge_live*_{pid}.db"))


@pytest.mark.slow
@pytest.mark.django_db
def test_two_processes_sharing_the_directory_are_summed_in_one_scrape(
    multiproc_dir: Path, recorders: Callable[..., subprocess.Popen[str]]
) -> None:
    alive = recorders(1000, 0.2, "wait")
    killed = recorders(3000, 0.4, "killed")
    killed.wait(timeout=30)
    assert _live_gauge_files(multiproc_dir, killed.pid), "the killed process left its live gauge"
    # This process's own instruments are not read in multi-process mode (nor counted twice).
    metrics.pruned("only-in-the-test-process", checkpoints=5)

    samples = scrape()

    flow = {"workflow": "shared-flow"}
    assert value(samples, "superstep_checkpoint_size_bytes_count", **flow) == 2
    assert value(samples, "superstep_checkpoint_size_bytes_sum", **flow) == 4000
    assert value(samples, "superstep_superstep_duration_seconds_sum", **flow) == pytest.approx(0.6)
    assert value(samples, "superstep_lease_takeovers_total", by="worker", **flow) == 2
    # The killed process was reaped at the scrape; the live one still executes its attempt.
    assert value(samples, "superstep_runs_executing", **flow) == 1
    assert not _live_gauge_files(multiproc_dir, killed.pid)
    assert (
        value(samples, "superstep_pruned_checkpoints_total", policy="only-in-the-test-process") == 0
    )
    assert value(samples, "superstep_database_up") == 1

    assert alive.stdin is not None
    alive.stdin.write("\n")
    alive.stdin.flush()
    assert alive.wait(timeout=30) == 0
    assert not _live_gauge_files(multiproc_dir, alive.pid), "atexit dropped its live gauge"
    samples = scrape()
    assert value(samples, "superstep_runs_executing", **flow) == 0
    # Counters of processes gone by still count: totals never go down.
    assert value(samples, "superstep_checkpoint_size_bytes_count", **flow) == 2


@pytest.mark.slow
@pytest.mark.django_db
def test_a_celery_child_that_exits_drops_its_live_gauges(
    multiproc_dir: Path, recorders: Callable[..., subprocess.Popen[str]], settings: Any
) -> None:
    settings.SUPERSTEP_METRICS_REAP_DEAD_PROCESSES = False  # only the signal may drop it
    child = recorders(100, 0.1, "wait")
    assert _live_gauge_files(multiproc_dir, child.pid)

    # What Celery sends from a prefork child on its way out (dashboard.config.celery wires it).
    worker_process_shutdown.send(sender=None, pid=child.pid, exitcode=0)

    assert not _live_gauge_files(multiproc_dir, child.pid)
    assert value(scrape(), "superstep_runs_executing", workflow="shared-flow") == 0


@pytest.mark.slow
@pytest.mark.django_db
def test_reaping_can_be_turned_off_for_writers_in_another_pid_namespace(
    multiproc_dir: Path, recorders: Callable[..., subprocess.Popen[str]], settings: Any
) -> None:
    settings.SUPERSTEP_METRICS_REAP_DEAD_PROCESSES = False
    killed = recorders(100, 0.1, "killed")
    killed.wait(timeout=30)
    assert value(scrape(), "superstep_runs_executing", workflow="shared-flow") == 1
    assert processes.reap_dead_processes(str(multiproc_dir)) == [killed.pid]


def test_a_multiprocess_directory_that_does_not_exist_is_refused_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "nowhere"
    monkeypatch.setenv(processes.VARIABLE, str(missing))
    with pytest.raises(RuntimeError, match="nowhere.*is not a directory"):
        processes.multiprocess_dir()


# ------------------------------------------------------------------ a host with workers only


def _get(url: str, token: str | None = None) -> tuple[int, dict[str, str], str]:
    request = urllib.request.Request(
        url, headers={"Authorization": f"Bearer {token}"} if token else {}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as refused:
        with refused:
            return refused.code, dict(refused.headers), refused.read().decode()


@pytest.mark.slow
def test_serve_metrics_exports_the_workers_of_its_host_to_the_token_only(
    multiproc_dir: Path,
    recorders: Callable[..., subprocess.Popen[str]],
    subprocess_env: Callable[..., dict[str, str]],
) -> None:
    recorders(1000, 0.2, "wait")
    recorders(3000, 0.4, "killed").wait(timeout=30)
    server = subprocess.Popen(
        [sys.executable, "manage.py", "serve_metrics", "--bind", "127.0.0.1", "--port", "0"],
        cwd=ROOT,
        env=subprocess_env(
            **{processes.VARIABLE: str(multiproc_dir), "SUPERSTEP_METRICS_TOKEN": TOKEN}
        ),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert line.startswith(f"serving the metrics of {multiproc_dir} on http://127.0.0.1:"), line
        url = line.split(" on ")[1].strip()

        status, headers, body = _get(url)
        assert (status, headers["WWW-Authenticate"]) == (401, 'Bearer realm="metrics"')
        assert _get(url, "wrong")[0] == 403
        assert _get(url.replace("/metrics", "/admin/"), TOKEN)[0] == 404
        status, headers, body = _get(url, TOKEN)
        assert status == 200
        assert headers["Content-Type"].startswith("text/plain; version=0.0.4")
    finally:
        server.terminate()
        server.communicate(timeout=30)

    samples = parse(body)
    flow = {"workflow": "shared-flow"}
    assert value(samples, "superstep_checkpoint_size_bytes_sum", **flow) == 4000
    assert value(samples, "superstep_runs_executing", **flow) == 1  # the killed one reaped
    # The run gauges come from the web processes, not from every worker host again.
    assert not [name for name, _ in samples if name in ("superstep_runs", "superstep_database_up")]


@pytest.mark.parametrize(
    ("variables", "refusal"),
    [
        ({}, "PROMETHEUS_MULTIPROC_DIR is not set"),
        ({"SUPERSTEP_METRICS_TOKEN": ""}, "SUPERSTEP_METRICS_TOKEN is not set"),
    ],
)
def test_serve_metrics_refuses_to_start_without_a_directory_or_a_token(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    settings: Any,
    variables: dict[str, str],
    refusal: str,
) -> None:
    monkeypatch.delenv(processes.VARIABLE, raising=False)
    if variables:
        monkeypatch.setenv(processes.VARIABLE, str(tmp_path))
        settings.SUPERSTEP_METRICS_TOKEN = variables["SUPERSTEP_METRICS_TOKEN"]
    with pytest.raises(CommandError, match=refusal):
        call_command("serve_metrics", "--port", "0")
