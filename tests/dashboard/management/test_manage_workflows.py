"""``manage.py workflows`` and ``manage.py run_workflow`` (dashboard/management/commands/), and
the README's "Your first workflow on the dashboard" run end to end in a child process."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError, OutputWrapper
from django.test import override_settings

from dashboard import catalog
from dashboard.config.settings import BASE_DIR
from dashboard.execution import embedded
from dashboard.management.commands import run_workflow
from dashboard.models import ApprovalRequest, RunStatus, WorkflowRun

EnvBuilder = Callable[..., dict[str, str]]


def call(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def refusal(*args: str) -> CommandError:
    with pytest.raises(CommandError) as refused:
        call(*args)
    return refused.value


# ------------------------------------------------------------------------------ workflows


def test_workflows_lists_each_with_source_input_requests_and_signature() -> None:
    out, _ = call("workflows")

    assert "refund  (demo)" in out
    assert "input:     RefundItem" in out
    assert "request:   ReplacementApproval -> ApprovalDecision  (executor hitl-gate)" in out
    assert "ManagerQuestion -> ManagerDecision  (executor manager-review/manager-approval)" in out
    assert f"signature: {catalog.describe('squares').graph_signature_hash}" in out


def test_workflows_json_has_the_schemas_and_every_registered_name() -> None:
    out, _ = call("workflows", "--json")

    listed = {item["name"]: item for item in json.loads(out)["workflows"]}
    assert list(listed) == catalog.names()
    gate = listed["return-replace"]
    assert gate["source"] == "demo" and gate["error"] is None
    assert gate["builder"] == "dashboard.demo.workflows:build_return_replace"
    assert gate["input_type"] == "ReturnReplaceRequest"
    assert "order_id" in gate["input_schema"]["properties"]
    [request] = gate["requests"]
    assert (request["executor"], request["request_type"], request["response_type"]) == (
        "hitl-gate",
        "ReplacementApproval",
        "ApprovalDecision",
    )
    assert "approved" in request["response_schema"]["properties"]
    assert gate["graph_signature_hash"] == catalog.describe("return-replace").graph_signature_hash


def test_workflows_reports_a_builder_that_fails_and_lists_the_rest() -> None:
    with override_settings(SUPERSTEP_WORKFLOWS={"broken": "builtins.len"}):
        with pytest.raises(CommandError, match="cannot be built: broken"):
            call("workflows", "--json")
        out = io.StringIO()
        with pytest.raises(CommandError):
            call_command("workflows", stdout=out)
    assert "broken  (settings)" in out.getvalue()
    assert "error:     TypeError" in out.getvalue()
    assert "refund  (demo)" in out.getvalue()


def test_workflows_says_how_to_register_when_there_are_none() -> None:
    with override_settings(SUPERSTEP_DEMO=False):
        out, _ = call("workflows")

    assert "No workflows are registered" in out and "SUPERSTEP_WORKFLOWS" in out


# ------------------------------------------------------------------------------ run_workflow


@pytest.mark.django_db(transaction=True)
def test_run_workflow_runs_to_completion_and_prints_the_output() -> None:
    out, err = call(
        "run_workflow", "squares", "--input", '{"limit": 3, "work_ms": 0}', "--interval", "0.05"
    )

    run = WorkflowRun.objects.get()
    assert run.status == RunStatus.COMPLETED
    assert json.loads(out) == {"$keys": "int", "1": 1, "2": 4, "3": 9}  # readable, as on the page
    assert f"run {run.pk} of squares started" in err and f"/runs/{run.pk}/" in err
    assert f"completed, superstep {run.current_superstep}" in err.splitlines()  # plain lines
    raw, _ = call("run_workflow", "squares", "--input", '{"limit": 2, "work_ms": 0}', "--raw")
    assert json.loads(raw)["$t"] == "dict"  # as the JSON API returns it


@pytest.mark.django_db(transaction=True)
def test_run_workflow_exits_1_when_the_run_fails() -> None:
    refused = refusal(
        "run_workflow",
        "fail-at-step",
        "--input",
        '{"steps": 3, "fail_at": 2, "work_ms": 0}',
        "--interval",
        "0.05",
    )

    run = WorkflowRun.objects.get()
    assert refused.returncode == 1
    assert run.status == RunStatus.FAILED
    assert str(refused) == f"run {run.pk} failed: {run.error_type}: {run.error_message}"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("refund", "--input", '{"work_ms": "soon"}'), "work_ms: Input should be a valid integer"),
        (("refund", "--input", "{'work_ms': 1}"), "--input is not JSON"),
        (("no-such-workflow",), "unknown workflow 'no-such-workflow'"),
        (("refund", "--user", "nobody"), "no active user named 'nobody'"),
    ],
)
def test_run_workflow_exits_2_on_bad_input_with_the_message(
    args: tuple[str, ...], says: str
) -> None:
    refused = refusal("run_workflow", *args)

    assert refused.returncode == 2
    assert says in str(refused)
    assert not WorkflowRun.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_run_workflow_starts_as_the_given_user_under_their_role(role_user: Any) -> None:
    role_user("vera", "Viewer")
    role_user("otto", "Operator")

    refused = refusal("run_workflow", "refund", "--user", "vera")
    call(
        "run_workflow",
        "refund",
        "--input",
        '{"work_ms": 0}',
        "--user",
        "otto",
        "--interval",
        "0.05",
    )

    assert refused.returncode == 1 and "may not start" in str(refused)
    assert WorkflowRun.objects.get().created_by.username == "otto"  # type: ignore[union-attr]


@pytest.mark.django_db(transaction=True)
def test_run_workflow_no_follow_prints_the_id_after_the_run_left_this_process() -> None:
    out, err = call("run_workflow", "return-replace", "--input", '{"work_ms": 0}', "--no-follow")

    run = WorkflowRun.objects.get()
    assert out.strip() == str(run.pk)
    assert "embedded mode" in err
    # Embedded mode: this process executed it as far as it goes without a person.
    assert run.status == RunStatus.WAITING


@pytest.mark.django_db(transaction=True)
def test_run_workflow_names_what_a_waiting_run_waits_for_and_stops_on_ctrl_c(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    err = io.StringIO()
    deadline = time.monotonic() + 60

    def interrupt(seconds: float) -> None:
        # Ctrl-C once the command has said what the run waits for, as a person would press it
        # (the run turning WAITING between the command's poll and its sleep is not enough).
        if "waiting for an answer" in err.getvalue() or time.monotonic() > deadline:
            raise KeyboardInterrupt
        real_sleep(seconds)

    real_sleep = run_workflow.sleep
    monkeypatch.setattr(run_workflow, "sleep", interrupt)

    with pytest.raises(CommandError) as stopped:
        call_command(
            "run_workflow",
            "return-replace",
            "--input",
            '{"work_ms": 0}',
            "--interval",
            "0.05",
            stdout=io.StringIO(),
            stderr=err,
        )

    assert embedded.wait_for_background_tasks(60)
    approval = ApprovalRequest.objects.get()
    assert (
        f"waiting for an answer to {approval.request_id} from executor hitl-gate" in err.getvalue()
    )
    assert stopped.value.returncode == 130
    assert "it goes on" in str(stopped.value)


def test_run_workflow_progress_redraws_one_line_on_a_terminal() -> None:
    terminal = io.StringIO()
    progress = run_workflow.Progress(OutputWrapper(terminal), interactive=True)
    run = WorkflowRun(workflow_name="refund", status=RunStatus.RUNNING, current_superstep=4)

    progress.update(run)
    run.status, run.current_superstep = RunStatus.COMPLETED, 5
    progress.update(run)
    progress.close()

    drawn = terminal.getvalue()
    assert drawn.count("\r\x1b[K") == 2 and drawn.endswith("\n")
    assert "running" in drawn and "superstep 5" in drawn and "completed" in drawn
    assert "\x1b[31" not in drawn  # progress, not an error: never painted red


# ------------------------------------------------------------------------------ end to end


def readme_workflow_module() -> str:
    """The module the README's "Your first workflow on the dashboard" tells the user to write."""
    readme = (BASE_DIR / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Your first workflow on the dashboard") :]
    start = section.index("```python\n") + len("```python\n")
    return section[start : section.index("```", start)]


def test_the_readme_workflow_registers_lists_and_runs_from_the_shell(
    tmp_path: Path, subprocess_env: EnvBuilder
) -> None:
    package = tmp_path / "acme_flows"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "invoices.py").write_text(readme_workflow_module())
    env = subprocess_env(
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        DEBUG="1",
        SUPERSTEP_DEMO="0",
        SUPERSTEP_WORKFLOWS="acme_flows.invoices",
        PYTHONPATH=str(tmp_path),
        LOG_LEVEL="WARNING",
    )

    def manage(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(BASE_DIR / "manage.py"), *args],
            env=env,
            cwd=BASE_DIR,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    assert manage("migrate", "-v0").returncode == 0
    listed = manage("workflows", "--json")
    ran = manage("run_workflow", "invoice-check", "--input", '{"customer": "ACME", "amount": 120}')
    refused = manage("run_workflow", "invoice-check", "--input", '{"customer": "ACME"}')
    failed = manage("run_workflow", "invoice-check", "--input", '{"customer": "ACME", "amount": 0}')

    [workflow] = json.loads(listed.stdout)["workflows"]
    assert (workflow["name"], workflow["source"], workflow["input_type"]) == (
        "invoice-check",
        "module",
        "Invoice",
    )
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == "booked 120.00 for ACME"
    assert "completed, superstep" in ran.stderr
    assert refused.returncode == 2 and "amount: Field required" in refused.stderr
    assert failed.returncode == 1 and "the invoice for ACME has no amount" in failed.stderr
