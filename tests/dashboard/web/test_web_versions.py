"""Versions on the pages and in the API: the run page says which version a run executes on and,
when it needs migration, why and from where it can move; the migrations page and the API move
runs one at a time or in bulk, and every refusal is a message, never a 500."""

from __future__ import annotations

import html
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client, override_settings

HERE = Path(__file__).resolve().parents[2] / "helpers"
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import versioned_flows as flows  # noqa: E402

from dashboard import services  # noqa: E402
from dashboard.access.tokens import create_token  # noqa: E402
from dashboard.execution import embedded  # noqa: E402
from dashboard.models import Checkpoint, RunStatus, WorkflowRun  # noqa: E402

pytestmark = pytest.mark.django_db(transaction=True)


def deploy(*builders: str) -> Any:
    return override_settings(SUPERSTEP_WORKFLOWS={"spend": list(builders)})


def start(
    operator_approver_client: Client, drive: Callable[..., WorkflowRun], amount: int = 120
) -> WorkflowRun:
    return drive(
        services.run_start,
        workflow_name="spend",
        input={"amount": amount},
        user=operator_approver_client.user,
    )  # type: ignore[attr-defined]


@pytest.fixture
def parked(
    operator_approver_client: Client, drive: Callable[..., WorkflowRun]
) -> Iterator[WorkflowRun]:
    """A v1 run waiting for approval, after a deploy of v3 that cannot carry it."""
    with deploy(flows.V1):
        run = start(operator_approver_client, drive)
    with deploy(flows.V3):
        services.park_runs_on_removed_versions()
        yield WorkflowRun.objects.get(pk=run.pk)


def text(response: Any) -> str:
    return html.unescape(response.content.decode())


def test_the_run_page_names_the_version_of_a_run_on_the_current_one(
    operator_approver_client: Client, drive: Callable[..., WorkflowRun]
) -> None:
    with deploy(flows.V1):
        run = start(operator_approver_client, drive)
        page = text(operator_approver_client.get(f"/runs/{run.pk}/"))
    assert f"Version {run.graph_version[:12]} · current" in " ".join(
        page.replace('<code title="' + run.graph_version + '">', "").replace("</code>", "").split()
    )
    assert "Needs migration" not in page


def test_a_run_kept_on_an_earlier_version_says_so(
    operator_approver_client: Client, drive: Callable[..., WorkflowRun]
) -> None:
    with deploy(flows.V1):
        run = start(operator_approver_client, drive)
    with deploy(flows.V1, flows.V3):
        page = text(operator_approver_client.get(f"/runs/{run.pk}/"))
    assert "an earlier version, kept side by side so this run finishes on it" in page
    # Its checkpoints are of a registered version: resumable, not "changed".
    assert "graph changed" not in page


def test_the_run_page_of_a_parked_run_says_why_and_offers_the_migration(
    parked: WorkflowRun, operator_approver_client: Client
) -> None:
    assert parked.status == RunStatus.NEEDS_MIGRATION
    page = text(operator_approver_client.get(f"/runs/{parked.pk}/"))
    assert "Needs migration." in page
    assert "saved state of executor 'counter'" in page
    assert 'id="migrate-form"' in page
    checkpoints = Checkpoint.objects.filter(run=parked).count()
    assert page.count('<option value="') >= checkpoints
    assert "latest (keeps its open requests and decisions)" in page
    assert 'name="discard_unmatched"' in page
    assert "graph changed" in page  # its checkpoints' version is gone


def test_a_viewer_sees_why_but_gets_no_form(parked: WorkflowRun, viewer_client: Client) -> None:
    page = text(viewer_client.get(f"/runs/{parked.pk}/"))
    assert "Needs migration." in page
    assert 'id="migrate-form"' not in page
    assert viewer_client.post(f"/runs/{parked.pk}/migrate/", {}).status_code == 403


def test_the_panel_previews_another_checkpoint(
    parked: WorkflowRun, operator_approver_client: Client
) -> None:
    first = Checkpoint.objects.filter(run=parked).order_by("superstep", "created_at").first()
    assert first is not None
    panel = text(
        operator_approver_client.get(
            f"/runs/{parked.pk}/version/", {"checkpoint_id": first.checkpoint_id}
        )
    )
    assert f'<option value="{first.checkpoint_id}" selected>' in panel
    # A lone surrogate as a browser sends it: bytes that are not UTF-8.
    unknown = operator_approver_client.get(f"/runs/{parked.pk}/version/?checkpoint_id=%ED%A0%80")
    assert unknown.status_code == 200 and "has no checkpoint" in text(unknown)


def test_migrating_without_discarding_refuses_with_the_blockers_then_discarding_moves_it(
    parked: WorkflowRun, operator_approver_client: Client
) -> None:
    refused = operator_approver_client.post(f"/runs/{parked.pk}/migrate/", {})
    assert refused.status_code == 409
    assert "Not done." in text(refused) and "saved state of executor 'counter'" in text(refused)
    assert WorkflowRun.objects.get(pk=parked.pk).status == RunStatus.NEEDS_MIGRATION

    moved = operator_approver_client.post(
        f"/runs/{parked.pk}/migrate/", {"discard_unmatched": "on"}
    )
    assert moved.status_code == 302 and moved["Location"] == f"/runs/{parked.pk}/"
    assert embedded.wait_for_background_tasks(60)
    run = WorkflowRun.objects.get(pk=parked.pk)
    assert run.status == RunStatus.WAITING
    assert run.graph_version == flows.spend_v3_incompatible().graph_signature_hash


def test_a_hostile_checkpoint_choice_is_a_404_not_a_500(
    parked: WorkflowRun, operator_approver_client: Client
) -> None:
    for value in ("nope", "x" * 5000, "%ED%A0%80", "%27%3B+DROP+TABLE+x"):
        response = operator_approver_client.post(
            f"/runs/{parked.pk}/migrate/",
            f"checkpoint_id={value}",
            content_type="application/x-www-form-urlencoded",
        )
        assert response.status_code == 404, value


def test_the_migrations_page_lists_parked_runs_and_migrates_them_in_bulk(
    parked: WorkflowRun, operator_approver_client: Client, drive: Callable[..., WorkflowRun]
) -> None:
    page = text(operator_approver_client.get("/runs/migrations/"))
    assert str(parked.pk)[:8] in page and "saved state of executor 'counter'" in page

    skipped = operator_approver_client.post(
        "/runs/migrations/", {"run_id": [str(parked.pk)]}, follow=True
    )
    assert "was skipped" in text(skipped) and "saved state" in text(skipped)

    done = operator_approver_client.post(
        "/runs/migrations/", {"run_id": [str(parked.pk)], "discard_unmatched": "on"}, follow=True
    )
    assert "1 run moved to the deployed version and queued." in text(done)
    assert embedded.wait_for_background_tasks(60)
    assert WorkflowRun.objects.get(pk=parked.pk).status == RunStatus.WAITING
    assert "No run needs migration" in text(operator_approver_client.get("/runs/migrations/"))


def test_the_migrations_page_refuses_bad_selections_with_a_message(
    operator_approver_client: Client,
) -> None:
    assert "Select at least one run" in text(
        operator_approver_client.post("/runs/migrations/", {}, follow=True)
    )
    bad = operator_approver_client.post(
        "/runs/migrations/", {"run_id": ["not-a-uuid"]}, follow=True
    )
    assert bad.status_code == 200 and "not a run id" in text(bad)


# ---------------------------------------------------------------------------------- the API


def bearer(client: Client) -> dict[str, str]:
    return {"Authorization": f"Bearer {create_token(client.user, 'test')}"}  # type: ignore[attr-defined]


def test_the_api_shows_the_version_and_migrates_with_the_same_rules(
    parked: WorkflowRun, operator_approver_client: Client
) -> None:
    headers = bearer(operator_approver_client)
    run = Client().get(f"/api/runs/{parked.pk}/", headers=headers).json()
    assert run["status"] == "needs_migration"
    assert run["graph_version"] == flows.spend_v1().graph_signature_hash
    assert "saved state of executor 'counter'" in run["migration_reason"]

    refused = Client().post(
        f"/api/runs/{parked.pk}/migrate/", "{}", content_type="application/json", headers=headers
    )
    assert refused.status_code == 409
    assert "saved state of executor 'counter'" in refused.json()["error"]

    moved = Client().post(
        f"/api/runs/{parked.pk}/migrate/",
        json.dumps({"discard_unmatched": True}),
        content_type="application/json",
        headers=headers,
    )
    assert moved.status_code == 202
    assert moved.json()["graph_version"] == flows.spend_v3_incompatible().graph_signature_hash


def test_the_api_bulk_migration_reports_each_run(
    parked: WorkflowRun, operator_approver_client: Client
) -> None:
    headers = bearer(operator_approver_client)
    body = {
        "run_ids": [str(parked.pk), "00000000-0000-4000-8000-000000000000"],
        "discard_unmatched": True,
    }
    response = Client().post(
        "/api/runs/migrate/", json.dumps(body), content_type="application/json", headers=headers
    )
    assert response.status_code == 200
    assert response.json() == {
        "migrated": [str(parked.pk)],
        "skipped": {
            "00000000-0000-4000-8000-000000000000": (
                "no run with id 00000000-0000-4000-8000-000000000000"
            )
        },
    }
    empty = Client().post(
        "/api/runs/migrate/",
        json.dumps({"run_ids": []}),
        content_type="application/json",
        headers=headers,
    )
    assert empty.status_code in (400, 422)


def test_a_checkpoint_of_a_version_kept_side_by_side_can_be_resumed_from_its_page(
    operator_approver_client: Client, drive: Callable[..., WorkflowRun]
) -> None:
    with deploy(flows.V1):
        run = start(operator_approver_client, drive)
    first = Checkpoint.objects.filter(run=run).order_by("superstep", "created_at").first()
    assert first is not None
    with deploy(flows.V1, flows.V3):
        kept = text(
            operator_approver_client.get(f"/runs/{run.pk}/checkpoints/{first.checkpoint_id}/")
        )
    with deploy(flows.V3):
        gone = text(
            operator_approver_client.get(f"/runs/{run.pk}/checkpoints/{first.checkpoint_id}/")
        )
    assert "graph changed" not in kept and "matches deployed" in kept
    assert "graph changed" in gone
