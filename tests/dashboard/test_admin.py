"""dashboard/admin.py: every model is listed, and the admin never writes."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.models import ApprovalRequest, Checkpoint, CheckpointBlob, RunEvent, WorkflowRun

MODELS = [WorkflowRun, Checkpoint, CheckpointBlob, ApprovalRequest, RunEvent]


@pytest.mark.django_db
@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_admin_lists_each_model(admin_client: Client, model: type) -> None:
    url = f"/admin/dashboard/{model._meta.model_name}/"

    assert admin_client.get(url).status_code == 200
    assert admin_client.get(url, {"q": "not-a-uuid"}).status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_admin_cannot_add_rows(admin_client: Client, model: type) -> None:
    response = admin_client.get(f"/admin/dashboard/{model._meta.model_name}/add/")

    assert response.status_code == 403


@pytest.mark.django_db
def test_admin_shows_a_run_read_only(admin_client: Client) -> None:
    run = WorkflowRun.objects.create(workflow_name="squares", input={"n": 3})
    url = f"/admin/dashboard/workflowrun/{run.pk}/change/"

    page = admin_client.get(url)
    post = admin_client.post(url, {"workflow_name": "renamed"})

    assert page.status_code == 200 and b"squares" in page.content
    assert post.status_code == 403
    run.refresh_from_db()
    assert run.workflow_name == "squares"


def test_admin_names_audit_entries_in_plain_english(admin_client: Client) -> None:
    page = admin_client.get("/admin/").content.decode()
    assert "Audit entries" in page and "Audit entrys" not in page


def test_a_retention_policys_creation_time_is_shown_not_edited(admin_client: Client) -> None:
    from dashboard.models import RetentionPolicy

    policy = RetentionPolicy.objects.create(name="keep-5", keep_last_checkpoints=5)
    page = admin_client.get(
        f"/admin/dashboard/retentionpolicy/{policy.pk}/change/"
    ).content.decode()
    assert 'name="created_at' not in page and "Created at" in page


def test_favicon_ico_leads_to_the_icon(client: Client) -> None:
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"] == "/static/favicon.svg"
