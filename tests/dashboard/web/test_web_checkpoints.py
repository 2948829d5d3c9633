"""The checkpoint inspector: trees, diff, download, the graph badge, resume and fork."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest
from django.test import Client

from dashboard import selectors, services
from dashboard.models import Checkpoint, RunStatus, WorkflowRun

pytestmark = pytest.mark.django_db(transaction=True)

Drive = Callable[..., WorkflowRun]


@pytest.fixture
def waiting(operator_client: Client, drive: Drive) -> WorkflowRun:
    """A return-replace run at its approval gate: checkpoints at supersteps 0 to 4."""
    return drive(
        services.run_start,
        workflow_name="return-replace",
        input={"order_id": "ORD-7", "work_ms": 0},
        user=operator_client.user,  # type: ignore[attr-defined]
    )


def checkpoint(run: WorkflowRun, superstep: int) -> Checkpoint:
    return Checkpoint.objects.filter(run=run, superstep=superstep).order_by("created_at").first()  # type: ignore[return-value]


def url(run: WorkflowRun, cp: Checkpoint, action: str = "") -> str:
    return f"/runs/{run.pk}/checkpoints/{cp.checkpoint_id}/{action}"


def test_inspector_shows_state_trees_and_the_diff_against_the_previous_checkpoint(
    operator_client: Client, waiting: WorkflowRun
) -> None:
    gate = checkpoint(waiting, 4)
    response = operator_client.get(url(waiting, gate))
    html = response.content.decode()
    assert response.status_code == 200
    # The shared state holds the parked ReturnState, shown readably (no "$t"/"v" wrappers).
    state = json.loads(
        html.split('<script id="shared-state-json" type="application/json">')[1].split("</script>")[
            0
        ]
    )
    assert state["pending:ORD-7"]["$model"] == "dashboard.demo.workflows.ReturnState"
    assert state["pending:ORD-7"]["order_id"] == "ORD-7"
    assert "No executor saved any state" in html
    diff = response.context["diff"]
    paths = {entry.path: entry.kind for entry in diff.entries}
    assert paths['$.state["pending:ORD-7"]'] == "added"
    assert paths["$.superstep"] == "changed"
    assert any(p.startswith("$.pending_requests") for p in paths)
    assert "(the previous checkpoint)" in html and "graph changed" not in html


def test_diff_against_any_checkpoint_of_the_run_as_an_htmx_partial(
    operator_client: Client, waiting: WorkflowRun
) -> None:
    first, gate = checkpoint(waiting, 1), checkpoint(waiting, 4)
    response = operator_client.get(
        url(waiting, gate) + f"?compare={first.checkpoint_id}",
        headers={"HX-Request": "true", "HX-Target": "checkpoint-diff"},
    )
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="checkpoint-diff"') and "<html" not in html
    assert "From superstep 1 to superstep 4" in html
    assert (
        "$.messages[0]</code>" in html and "removed" in html
    )  # parked in shared state at the gate


def test_download_is_the_whole_checkpoint_as_stored(
    operator_client: Client, waiting: WorkflowRun
) -> None:
    gate = checkpoint(waiting, 4)
    response = operator_client.get(url(waiting, gate, "download/"))
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert response["Content-Disposition"] == (
        f'attachment; filename="return-replace-superstep-4-{gate.checkpoint_id}.json"'
    )
    document = json.loads(response.content)
    assert document == selectors.checkpoint_document(gate)
    assert document["state"]["pending:ORD-7"]["$t"] == "model"  # the codec's own form
    assert document["pending_request_info_events"]  # put back from its blob
    assert operator_client.get(f"/runs/{waiting.pk}/checkpoints/nope/download/").status_code == 404


def test_resume_dialog_says_what_reruns_and_resume_starts_a_branch(
    operator_client: Client, waiting: WorkflowRun, drive: Drive
) -> None:
    second = checkpoint(waiting, 2)
    html = operator_client.get(url(waiting, second)).content.decode()
    assert "Supersteps 3–4 will run again" in html
    assert "Executors that re-execute: search-replacements, hitl-gate." in html
    assert "1 approval request(s) raised after this point will be asked again." in html
    assert "The run&#x27;s pending approval requests are cancelled." in html
    response = operator_client.post(url(waiting, second, "resume/"), {"reason": "ask again"})
    assert response.status_code == 302 and response["Location"] == f"/runs/{waiting.pk}/"
    from dashboard.execution import embedded

    assert embedded.wait_for_background_tasks(60)
    page = operator_client.get(f"/runs/{waiting.pk}/")
    timeline = page.context["timeline"]
    branch_point = next(e for e in timeline.entries if e.superstep == 2)
    (branch,) = branch_point.branches
    assert branch.kind == "resume" and branch.current
    assert [e.superstep for e in branch.entries] == [2, 3, 4]
    assert "Resumed from superstep 2" in page.content.decode()


def test_resume_while_the_run_is_active_is_a_plain_409(
    operator_client: Client, waiting: WorkflowRun
) -> None:
    WorkflowRun.objects.filter(pk=waiting.pk).update(status=RunStatus.QUEUED)
    response = operator_client.post(url(waiting, checkpoint(waiting, 2), "resume/"))
    assert response.status_code == 409
    assert (
        f"run {waiting.pk} is queued; cancel it first or wait for it" in response.content.decode()
    )


def test_a_checkpoint_of_another_graph_version_is_flagged_before_resume(
    operator_client: Client, waiting: WorkflowRun
) -> None:
    old = checkpoint(waiting, 3)
    Checkpoint.objects.filter(pk=old.pk).update(graph_signature_hash="0" * 64)
    html = operator_client.get(url(waiting, old)).content.decode()
    assert "This checkpoint no longer matches the deployed workflow." in html
    assert 'disabled aria-describedby="mismatch-alert"' in html
    run_page = operator_client.get(f"/runs/{waiting.pk}/").content.decode()
    assert "graph changed" in run_page
    refused = operator_client.post(url(waiting, old, "resume/"))
    assert (
        refused.status_code == 409
        and "no longer matches the deployed workflow" in refused.content.decode()
    )


def editor_fields(html: str) -> dict[str, str]:
    """The fork editor's field names by the path of the value each edits."""
    return {
        path: name
        for name, path in re.findall(r'name="(f\d+)"[^>]*data-fork-field="([^"]+)"', html)
    }


def test_fork_with_edited_state_creates_a_new_run(
    operator_client: Client, waiting: WorkflowRun, drive: Drive
) -> None:
    gate = checkpoint(waiting, 4)
    page = operator_client.get(url(waiting, gate)).content.decode()
    fields = editor_fields(page)
    # The parked ReturnState is edited field by field, by name.
    refund = fields["state.pending:ORD-7.refund_amount"]
    assert f'name="{refund}" value="49.9"' in page
    response = operator_client.post(url(waiting, gate, "fork/"), {refund: "100", "reason": "try"})
    fork = WorkflowRun.objects.exclude(pk=waiting.pk).get()
    assert response.status_code == 302 and response["Location"] == f"/runs/{fork.pk}/"
    assert fork.parent_run_id == waiting.pk and fork.origin_checkpoint_id == gate.checkpoint_id
    from dashboard.execution import embedded

    assert embedded.wait_for_background_tasks(60)
    fork_page = operator_client.get(f"/runs/{fork.pk}/").content.decode()
    assert "Forked from" in fork_page and f'href="/runs/{waiting.pk}/"' in fork_page
    parent_page = operator_client.get(f"/runs/{waiting.pk}/").content.decode()
    assert f"Forked into run {str(fork.pk)[:8]}" in parent_page
    forked_state = selectors.checkpoint_document(
        Checkpoint.objects.filter(run=fork).order_by("created_at").first()
    )  # type: ignore[arg-type]
    assert forked_state["state"]["pending:ORD-7"]["v"]["refund_amount"] == 100.0


def test_fork_errors_are_shown_beside_the_editor(
    operator_client: Client, waiting: WorkflowRun
) -> None:
    gate = checkpoint(waiting, 4)
    fields = editor_fields(operator_client.get(url(waiting, gate)).content.decode())
    steps = fields["state.pending:ORD-7.completed_steps"]
    bad_json = operator_client.post(url(waiting, gate, "fork/"), {steps: "[oops"})
    html = bad_json.content.decode()
    assert bad_json.status_code == 422 and f'id="fork-{steps}-error"' in html
    assert html.count("Not valid JSON") == 1
    assert '<details class="fork-editor" id="fork-details" open>' in html
    # The dataclass field is a list of strings: the service says so, beside the field.
    mistyped = operator_client.post(url(waiting, gate, "fork/"), {steps: "[1]"})
    html = mistyped.content.decode()
    assert mistyped.status_code == 422
    assert (
        html.count("[0]: Input should be a valid string") == 1
        and f'id="fork-{steps}-error"' in html
    )
    assert WorkflowRun.objects.count() == 1


def test_a_viewer_may_look_but_not_fork(
    client_as: Callable[..., Client], waiting: WorkflowRun
) -> None:
    viewer = client_as("Viewer")
    gate = checkpoint(waiting, 4)
    page = viewer.get(url(waiting, gate)).content.decode()
    assert "Resume from here" not in page and "may inspect checkpoints but not resume" in page
    refused = viewer.post(url(waiting, gate, "fork/"), {})
    assert refused.status_code == 403 and "may not fork" in refused.content.decode()
    checked = viewer.post(url(waiting, gate, "fork/check/"), {}, headers={"HX-Request": "true"})
    assert checked.status_code == 403 and "may not fork" in checked.content.decode()
