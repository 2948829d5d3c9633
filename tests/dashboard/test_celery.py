"""dashboard/config/celery.py: the app workers run, configured from Django settings."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from celery import Celery

from dashboard import celery_app
from dashboard.config.settings import BASE_DIR

EnvBuilder = Callable[..., dict[str, str]]


def test_celery_app_takes_its_configuration_from_django_settings() -> None:
    conf = celery_app.conf

    assert celery_app.main == "dashboard"
    assert conf.task_serializer == conf.result_serializer == "json"
    assert conf.accept_content == ["json"]
    assert conf.task_acks_late is True
    assert conf.task_reject_on_worker_lost is True
    assert conf.worker_prefetch_multiplier == 1
    assert conf.task_ignore_result is True


@pytest.fixture
def worker_log(tmp_path: Path) -> Path:
    return tmp_path / "worker.log"


@pytest.fixture
def worker(
    redis_url: str,
    postgres_db_url: str,
    subprocess_env: EnvBuilder,
    secret_key: str,
    worker_log: Path,
    stop_process: Callable[[subprocess.Popen[bytes]], None],
) -> Iterator[subprocess.Popen[bytes]]:
    """``celery -A dashboard worker`` in production mode; its output goes to ``worker_log``."""
    env = subprocess_env(
        DEBUG="0",
        SECRET_KEY=secret_key,
        DATABASE_URL=postgres_db_url,
        REDIS_URL=redis_url,
        PYTHONPATH=str(Path(__file__).parent),
    )
    command = [
        *(sys.executable, "-m", "celery", "-A", "dashboard", "worker", "--pool", "solo"),
        *("--include", "celery_test_tasks", "--loglevel", "INFO"),
        *("--without-mingle", "--without-gossip", "--hostname", "smoke@%h"),
    ]
    with worker_log.open("wb") as log:
        process = subprocess.Popen(
            command, cwd=BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT
        )
    try:
        yield process
    finally:
        stop_process(process)


@pytest.mark.slow
@pytest.mark.redis
@pytest.mark.postgres
def test_celery_worker_runs_a_task_published_to_redis(
    worker: subprocess.Popen[bytes], worker_log: Path, redis_url: str, tmp_path: Path
) -> None:
    client = Celery("smoke-client", broker=redis_url, set_as_current=False)
    client.conf.update(task_serializer="json", accept_content=["json"])
    target = tmp_path / "written-by-worker.txt"

    with client:
        client.send_task("tests.write_file", args=[str(target), "hello"])

    deadline = time.monotonic() + 60
    while not target.exists() and worker.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert target.exists(), f"the worker did not run the task:\n{worker_log.read_text()}"
    assert target.read_text() == "hello"
