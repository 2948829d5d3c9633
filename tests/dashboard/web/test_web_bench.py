"""tests/bench/pages_bench.py: seeds runs fast and times every page (all must answer 200)."""

from __future__ import annotations

import importlib.util
import io
import sys
from pathlib import Path
from types import ModuleType

import pytest

from dashboard.models import ApprovalRequest, RunStatus, WorkflowRun

PAGES_BENCH = Path(__file__).resolve().parents[2] / "bench" / "pages_bench.py"


def _load_pages_bench() -> ModuleType:
    """The benchmark script as a module (it is a script in tests/bench/, not a package)."""
    spec = importlib.util.spec_from_file_location("pages_bench", PAGES_BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("pages_bench", module)
    spec.loader.exec_module(module)
    return module


pages_bench = _load_pages_bench()
BENCH_PREFIX, clear_bench_runs, seed_runs = (
    pages_bench.BENCH_PREFIX,
    pages_bench.clear_bench_runs,
    pages_bench.seed_runs,
)


@pytest.mark.django_db(transaction=True)
def test_bench_pages_seeds_and_times_every_page() -> None:
    out = io.StringIO()
    pages_bench.bench_pages(runs=300, repeat=1, stdout=out)
    report = out.getvalue()
    assert "seeded 300 runs" in report
    table = [line for line in report.splitlines() if "  200  " in line]
    assert len(table) == 25, report  # every page answered 200
    assert "runs list, page 2 (keyset)" in report and "storage" in report
    assert clear_bench_runs() > 0
    assert not WorkflowRun.objects.filter(engine_run_id__startswith=BENCH_PREFIX).exists()


@pytest.mark.django_db
def test_seeded_runs_have_a_realistic_mix_and_waiting_ones_wait_on_a_request() -> None:
    assert seed_runs(400) == 400
    statuses = set(WorkflowRun.objects.values_list("status", flat=True))
    assert {RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.WAITING} <= statuses
    waiting = WorkflowRun.objects.filter(status=RunStatus.WAITING).count()
    assert ApprovalRequest.objects.filter(status="pending").count() == waiting


@pytest.mark.postgres
@pytest.mark.django_db(databases=["pg"])
def test_postgres_has_the_trigram_index_for_text_search() -> None:
    from django.db import connections

    with connections["pg"].cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'run_input_trgm'")
        (definition,) = cursor.fetchone()
    assert "gin_trgm_ops" in definition and "upper((input)::text)" in definition
