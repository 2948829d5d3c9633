"""A functional run (``@workflow`` / ``@step``) survives the loss of its worker mid-step.

Production mode: Daphne, two real ``celery -A dashboard worker`` processes on Redis and a fresh
PostgreSQL database, and the ``counted-steps`` workflow (tests/helpers/counted_steps.py), whose
steps append each call to a file. The worker is killed with SIGKILL while the ``pack`` step
runs; once its lease (``SUPERSTEP_LEASE_SECONDS=3``) lapsed and the sweeper requeued the run,
another worker resumes it from its last checkpoint: the steps that had completed are not called
again (their saved results are replayed), the interrupted one runs again exactly once, and the
run completes with the output an uninterrupted run gives.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import scratch_postgres_database
from tests.helpers.stack import Stack, deployed, lineage_is_unbroken, production_env, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.redis]

LEASE_SECONDS = 3


@pytest.fixture(scope="module")
def stack(
    redis_url: str,
    subprocess_env: Callable[..., dict[str, str]],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Stack]:
    with scratch_postgres_database("superstep_fn") as db_url:
        env = production_env(
            subprocess_env,
            database_url=db_url,
            redis_url=redis_url,
            SUPERSTEP_WORKFLOWS="counted_steps",
            SUPERSTEP_LEASE_SECONDS=str(LEASE_SECONDS),
            SUPERSTEP_BACKGROUND_SERVICES="0",  # the test sweeps when it means to
        )
        with deployed(env, db_url, tmp_path_factory.mktemp("functional-worker")) as deployment:
            deployment.daphne()
            deployment.worker("w1")
            deployment.worker("w2")
            yield deployment


def calls(folder: Path) -> list[str]:
    log = folder / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


def test_a_worker_killed_mid_step_resumes_on_another_without_running_done_steps_again(
    stack: Stack, tmp_path: Path
) -> None:
    token = str(stack.driver("user", "olga", "Operator"))
    run_id = stack.start_run(token, "counted-steps", {"folder": str(tmp_path)})
    wait_for(lambda: (tmp_path / "pack.started").exists(), "the pack step to start", stack.log)
    owner = stack.run(run_id)["lease_owner"]
    victim = stack.lease_holder(run_id)
    assert calls(tmp_path) == ["fetch", "price", "pack"]

    stack.kill(victim)  # SIGKILL in the middle of the step
    wait_for(
        lambda: stack.driver("sweep") == [run_id],
        "the sweeper to requeue the run",
        stack.log,
        timeout=LEASE_SECONDS * 10,
    )

    run = stack.wait_for_run(run_id, "completed", "failed")
    assert run["status"] == "completed", run["traceback"]
    assert run["output"] == "shipped parcel of 21"
    # fetch and price were replayed, not called; pack ran again exactly once, then ship.
    assert calls(tmp_path) == ["fetch", "price", "pack", "pack", "pack done", "ship"]
    attempts = stack.running_attempts(run_id)
    assert [a["attempt"] for a in attempts] == [1, 2]
    assert attempts[0]["worker"] == owner != attempts[1]["worker"]
    lineage_is_unbroken(stack.checkpoints(run_id))
    assert stack.event_seqs(run_id) == list(range(1, run["last_event_seq"] + 1))
    assert not stack.exited(), stack.log()
