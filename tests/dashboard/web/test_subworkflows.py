"""Sub-workflows in the dashboard (MAF's ``WorkflowExecutor``), with the ``expense-claim`` demo:
its manager review is a workflow of its own whose approval request propagates to the outer run.

The inner request reaches the approval inbox like any other, the decision resumes the inner
workflow and the outer one completes; resume and fork work from the checkpoint taken while the
inner workflow waited; the run page draws the sub-workflow as a node that opens onto the inner
graph and state, marks output and intermediate executors, and lists intermediate outputs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest
from django.test import Client

from dashboard import catalog, services
from dashboard.models import ApprovalRequest, ApprovalStatus, Checkpoint, RunStatus, WorkflowRun
from dashboard.renderers.graph_layout import NodeInfo, layout_graph
from dashboard.renderers.workflow_graph import node_info
from dashboard.selectors import checkpoint_document
from dashboard.web.run_page.subworkflows import inner_states, nested_document

Drive = Callable[..., WorkflowRun]
CLAIM = {"employee": "Dana", "amount": 420.0, "category": "travel", "work_ms": 0}
OUTER_NODE = re.compile(r'<g class="node state-(\w+)" data-executor="([^"]+)" data-kind="(\w+)"')
INNER_NODE = re.compile(r'<g class="node state-(\w+)" data-inner-executor="([^"]+)"')


def start_claim(drive: Drive, user: Any, **data: Any) -> WorkflowRun:
    return drive(
        services.run_start, workflow_name="expense-claim", input={**CLAIM, **data}, user=user
    )


def pending_request(run: WorkflowRun) -> ApprovalRequest:
    (request,) = ApprovalRequest.objects.filter(run=run, status=ApprovalStatus.PENDING)
    return request


def decide(drive: Drive, request: ApprovalRequest, user: Any, approved: bool, note: str) -> Any:
    return drive(
        services.approval_decide,
        request.request_id,
        user=user,
        approved=approved,
        response={"note": note},
        reason="checked the receipts",
    )


def waiting_checkpoint(run: WorkflowRun) -> Checkpoint:
    """The checkpoint taken while the manager review waited for its answer."""
    return (
        Checkpoint.objects.filter(run=run, pending_request_count=1).order_by("created_at").first()
    )


# ----------------------------------------------------------------- pieces, without a database


def test_the_demo_graph_describes_its_sub_workflow_and_output_roles() -> None:
    description = catalog.describe("expense-claim").to_dict()

    info = node_info(description)

    assert info["manager-review"] == NodeInfo("subworkflow", "sub-workflow: manager-review", "")
    assert info["intake"].role == "intermediate" and info["payout"].role == "output"
    inner = description["executors"]["manager-review"]["workflow"]
    assert node_info(inner)["policy-check"].role == "intermediate"
    assert node_info(inner)["manager-approval"].role == "output"


def test_without_a_designation_the_executors_that_yield_are_the_output_ones() -> None:
    info = node_info(catalog.describe("return-replace").to_dict())

    assert {name for name, one in info.items() if one.role == "output"} == {"finalize"}
    assert all(one.kind == "executor" for one in info.values())


def test_a_sub_workflow_node_is_taller_and_keeps_its_caption_and_role() -> None:
    layout = layout_graph(
        ["a", "sub", "b"],
        [("a", "sub"), ("sub", "b")],
        "a",
        {
            "sub": NodeInfo("subworkflow", "sub-workflow: a-rather-long-inner-name"),
            "b": NodeInfo(role="output"),
            "a": NodeInfo(kind="<script>", role="<b>"),  # unknown values fall back
        },
    )
    nodes = {node.id: node for node in layout.nodes}

    assert nodes["sub"].is_subworkflow and nodes["sub"].height > nodes["b"].height
    assert nodes["sub"].caption == "sub-workflow: a-rather-long…"
    assert nodes["b"].role == "output"
    assert (nodes["a"].kind, nodes["a"].role) == ("executor", "")
    view = layout.annotate({})
    assert [item.sub_index for item in view.nodes] == [None, 0, None]


def test_nested_document_undoes_the_outer_codecs_wrapping_of_the_inner_checkpoint() -> None:
    wrapped_event = {
        "$t": "dict",
        "v": [["$t", "model"], ["name", "pkg.Question"], ["v", {"text": "ok?"}]],
    }
    document = {
        "executor_states": {
            "review": {
                "sub_workflow_checkpoint": {
                    "iteration_count": 2,
                    "messages": [],
                    "state": {"policy": {"limit": 10}},
                    "pending_request_info_events": {
                        "r1": {"source_executor_id": "ask", "data": wrapped_event}
                    },
                }
            }
        }
    }

    nested = nested_document(document, "review")

    assert nested is not None
    assert nested["pending_request_info_events"]["r1"]["data"] == {
        "$t": "model",
        "name": "pkg.Question",
        "v": {"text": "ok?"},
    }
    assert nested_document(document, "other") is None
    assert nested_document({"executor_states": {"review": {}}}, "review") is None


def test_inner_states_come_from_the_nested_checkpoint() -> None:
    edges = [("check", "ask"), ("ask", "after")]
    waiting = {
        "iteration_count": 2,
        "messages": [],
        "pending_request_info_events": {"r1": {"source_executor_id": "ask"}},
    }
    finished = {"iteration_count": 3, "messages": [], "pending_request_info_events": {}}
    in_flight = {
        "iteration_count": 1,
        "messages": [{"source_id": "check", "target_id": None}],
        "pending_request_info_events": {},
    }

    assert inner_states(waiting, edges, active=False) == {"ask": "waiting", "check": "done"}
    assert inner_states(finished, edges, active=False) == dict.fromkeys(
        ["check", "ask", "after"], "done"
    )
    assert inner_states(in_flight, edges, active=True) == {"ask": "running", "check": "done"}
    assert inner_states(None, edges, active=True) == {}


# ------------------------------------------------------------- through the services and worker


pytestmark_db = pytest.mark.django_db(transaction=True)


@pytestmark_db
def test_inner_request_reaches_the_inbox_and_the_decision_completes_the_outer_run(
    drive: Drive, role_user: Callable[..., Any]
) -> None:
    user = role_user("dana-boss", "Operator", "Approver")
    run = start_claim(drive, user)
    assert run.status == RunStatus.WAITING

    request = pending_request(run)
    # The propagated request is the sub-workflow node's, with the inner question and type.
    assert request.executor_id == "manager-review"
    assert request.request_data["v"]["question"] == "Approve Dana's travel claim of 420.00?"
    assert request.response_type.endswith("ManagerDecision")
    assert "approved" in request.response_schema["properties"]

    decide(drive, request, user, True, "receipts fine")

    done = WorkflowRun.objects.get(pk=run.pk)
    assert done.status == RunStatus.COMPLETED
    assert done.output["status"] == "paid" and done.output["reviewed_by"] == "manager"
    assert done.output["note"] == "receipts fine" and done.output["paid"] == 420.0


@pytestmark_db
def test_a_rejection_resumes_the_inner_workflow_too(
    drive: Drive, role_user: Callable[..., Any]
) -> None:
    user = role_user("dana-boss", "Operator", "Approver")
    run = start_claim(drive, user, amount=900.0)

    decide(drive, pending_request(run), user, False, "no receipts")

    done = WorkflowRun.objects.get(pk=run.pk)
    assert done.status == RunStatus.COMPLETED
    assert (done.output["status"], done.output["paid"]) == ("rejected", 0.0)


@pytestmark_db
def test_a_small_claim_never_asks_and_completes_in_the_sub_workflow(
    drive: Drive, role_user: Callable[..., Any]
) -> None:
    run = start_claim(drive, role_user("op", "Operator"), amount=40.0)

    assert run.status == RunStatus.COMPLETED
    assert run.output["reviewed_by"] == "policy"
    assert not ApprovalRequest.objects.filter(run=run).exists()


@pytestmark_db
def test_resume_from_the_checkpoint_taken_inside_the_sub_workflow_asks_again_and_completes(
    drive: Drive, role_user: Callable[..., Any]
) -> None:
    user = role_user("dana-boss", "Operator", "Approver")
    run = start_claim(drive, user)
    decide(drive, pending_request(run), user, True, "first time")
    inside = waiting_checkpoint(run)
    assert nested_document(checkpoint_document(inside), "manager-review") is not None

    resumed = drive(
        services.run_resume, run.pk, checkpoint_id=inside.checkpoint_id, user=user, reason="again"
    )

    assert resumed.status == RunStatus.WAITING
    again = pending_request(resumed)
    assert again.engine_run_id == resumed.engine_run_id != inside.engine_run_id
    decide(drive, again, user, False, "second thoughts")
    done = WorkflowRun.objects.get(pk=run.pk)
    assert done.status == RunStatus.COMPLETED
    assert (done.output["status"], done.output["note"]) == ("rejected", "second thoughts")


@pytestmark_db
def test_fork_from_the_checkpoint_taken_inside_the_sub_workflow_runs_on_its_own(
    drive: Drive, role_user: Callable[..., Any]
) -> None:
    user = role_user("dana-boss", "Operator", "Approver")
    run = start_claim(drive, user)
    inside = waiting_checkpoint(run)

    fork = drive(
        services.run_fork, run.pk, checkpoint_id=inside.checkpoint_id, user=user, reason="a copy"
    )

    assert fork.pk != run.pk and fork.parent_run_id == run.pk
    assert fork.status == RunStatus.WAITING
    decide(drive, pending_request(fork), user, True, "forked")
    assert WorkflowRun.objects.get(pk=fork.pk).output["note"] == "forked"
    # The original still waits on its own request.
    assert WorkflowRun.objects.get(pk=run.pk).status == RunStatus.WAITING


# ------------------------------------------------------------------------------ the run page


@pytestmark_db
def test_run_page_draws_the_sub_workflow_node_and_its_inner_graph_and_state(
    drive: Drive, client_as: Callable[..., Client]
) -> None:
    client = client_as("Operator", "Approver")
    run = start_claim(drive, client.user)  # type: ignore[attr-defined]
    request = pending_request(run)

    html = client.get(f"/runs/{run.pk}/").content.decode()

    outer = {name: (state, kind) for state, name, kind in OUTER_NODE.findall(html)}
    assert outer == {
        "intake": ("done", "executor"),
        "manager-review": ("waiting", "subworkflow"),
        "payout": ("idle", "executor"),
    }
    assert "sub-workflow: manager-review" in html
    assert 'data-role="output"' in html and 'data-role="intermediate"' in html
    assert f'href="/runs/{run.pk}/?sub=manager-review#subworkflow-0"' in html
    inner = {name: state for state, name in INNER_NODE.findall(html)}
    assert inner == {"policy-check": "done", "manager-approval": "waiting"}
    assert "waits for 1 answer" in html
    # "Decide in the inbox" for the inner request
    assert f"?request={quote(request.request_id)}" in html
    assert "category_limit" in html  # the inner shared state
    # Intermediate outputs: the outer intake's and the inner policy check's (re-emitted).
    assert "Intermediate outputs" in html
    assert "claim of 420.00 from Dana received" in html
    assert "policy check: travel limit 2000.00, within policy" in html
    # Opening the node opens its panel.
    assert '<details class="subworkflow-panel" id="subworkflow-0">' in html
    opened = client.get(f"/runs/{run.pk}/?sub=manager-review").content.decode()
    assert '<details class="subworkflow-panel" id="subworkflow-0" open>' in opened


@pytestmark_db
def test_the_panel_shows_the_inner_state_at_a_chosen_checkpoint(
    drive: Drive, client_as: Callable[..., Client]
) -> None:
    client = client_as("Operator", "Approver")
    user = client.user  # type: ignore[attr-defined]
    run = start_claim(drive, user)
    decide(drive, pending_request(run), user, True, "ok")
    inside = waiting_checkpoint(run)
    before = Checkpoint.objects.filter(run=run, superstep=1).first()
    url = f"/runs/{run.pk}/subworkflow/?sub=manager-review"

    latest = client.get(url).content.decode()
    at_wait = client.get(f"{url}&checkpoint={inside.checkpoint_id}").content.decode()
    not_yet = client.get(f"{url}&checkpoint={before.checkpoint_id}").content.decode()

    assert {n: s for s, n in INNER_NODE.findall(latest)} == {
        "policy-check": "done",
        "manager-approval": "done",
    }
    assert "finished" in latest
    assert {n: s for s, n in INNER_NODE.findall(at_wait)}["manager-approval"] == "waiting"
    assert "Decide in the inbox" not in at_wait  # already decided: no link to a closed request
    assert "has not run yet" in not_yet
    assert client.get(f"/runs/{run.pk}/subworkflow/?sub=intake").status_code == 404
    assert client.get(f"/runs/{run.pk}/subworkflow/?sub=%3Cscript%3E").status_code == 404


@pytestmark_db
def test_executor_names_in_the_sub_workflow_panel_are_escaped(
    drive: Drive, client_as: Callable[..., Client]
) -> None:
    client = client_as("Operator")
    run = start_claim(drive, client.user, employee="<img src=x onerror=alert(1)>")  # type: ignore[attr-defined]

    html = client.get(f"/runs/{run.pk}/").content.decode()

    assert "<img src=x" not in html
