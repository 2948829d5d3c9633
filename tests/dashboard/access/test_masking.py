"""Sensitive fields masked by role (issue 27): declared on the type or by path, masked in
everything the server sends, revealed one field at a time by those allowed, audited, and
kept as they were by a fork from someone who may not see them.

The demo's ``card-dispute`` declares both kinds: its types mark the customer's e-mail,
phone, card digits and a refund's bank account; its registration names the contact kept in
shared state and the e-mail repeated in the output.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import pytest
from django.test import Client

from dashboard import services
from dashboard.access import masking
from dashboard.catalog.sensitive import SensitivePathError, parse_path
from dashboard.checkpoints import documents
from dashboard.models import ApprovalRequest, AuditEntry, RunEvent, RunStatus, WorkflowRun
from tests.helpers import fork_pages, sensitive_scan
from tests.helpers.paused_runs import settle
from workflows import Sensitive, register_type, sensitive_fields

DISPUTE = {
    "customer": "Ruth Okafor",
    "email": "ruth.okafor@example.org",
    "phone": "+44 7700 900555",
    "card_last4": "9137",
    "amount": 42.5,
    "merchant": "Contoso Air",
}
IBAN = "GB33BUKB20201555555555"
SECRETS = (DISPUTE["email"], DISPUTE["phone"], DISPUTE["card_last4"], IBAN)


# ------------------------------------------------------------------ declaring and masking


@dataclass
class Card:
    holder: str
    number: Annotated[str, Sensitive("card number")]
    cvc: Annotated[str | None, Sensitive()] = None


register_type(Card)


def card(number: str = "4000 1234 5678 9010") -> dict[str, Any]:
    return {"$t": "model", "name": f"{__name__}.Card", "v": {"holder": "Ann", "number": number}}


def test_a_type_marks_its_sensitive_fields_under_optional_too() -> None:
    assert {name: m.reason for name, m in sensitive_fields(Card).items()} == {
        "number": "card number",
        "cvc": "",
    }
    assert sensitive_fields(int) == {}


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("input.email", "is not a sensitive path"),
        ("$.inputs.email", "must start with one of"),
        ("$.state.a..b", "cannot read"),
        ("$.executors", "must name an executor id"),
        (42, "is not a sensitive path"),
    ],
)
def test_a_path_that_cannot_be_read_is_refused_with_the_reason(path: object, problem: str) -> None:
    with pytest.raises(SensitivePathError, match=problem):
        parse_path(path)


def test_a_model_of_a_marked_type_is_masked_wherever_it_travels() -> None:
    masker = masking.Masker("run-1")
    shown = masker.value({"inbox": [card(), {"note": "x"}]}, where="event")
    number = shown["inbox"][0]["v"]["number"]
    assert masking.is_mask(number) and shown["inbox"][0]["v"]["holder"] == "Ann"
    assert [m.path for m in masker.found] == ["$.inbox[0].number"]
    assert masker.originals[number] == "4000 1234 5678 9010"


def test_paths_mask_plain_dicts_lists_and_fields_of_models() -> None:
    paths = tuple(
        parse_path(p)
        for p in ("$.state.contact.phone", "$.state.people[*].email", "$.executors.*.card")
    )
    masker = masking.Masker("run-1", paths)
    document = masker.document(
        {
            "state": {
                "contact": {"phone": "+1 555", "name": "Bo"},
                "people": [{"email": "a@x.org"}, {"email": "b@x.org"}],
            },
            "executor_states": {"billing": {"card": "1111"}, "other": {"card": "2222"}},
        }
    )
    assert document["state"]["contact"]["name"] == "Bo"
    assert sorted(m.path for m in masker.found) == [
        "$.executors.billing.card",
        "$.executors.other.card",
        "$.state.contact.phone",
        "$.state.people[0].email",
        "$.state.people[1].email",
    ]
    assert not any(v in json.dumps(document) for v in ("+1 555", "a@x.org", "1111", "2222"))


def test_a_mask_says_whether_a_value_changed_within_a_run_and_links_no_two_runs() -> None:
    first, again, other = masking.Masker("run-1"), masking.Masker("run-1"), masking.Masker("run-2")
    assert first.mask_of("4242") == again.mask_of("4242") != first.mask_of("4243")
    assert first.mask_of("4242") != other.mask_of("4242")


def test_restoring_puts_a_value_back_only_where_its_mask_was_made() -> None:
    masker = masking.Masker("run-1", (parse_path("$.state.secret"),))
    shown = masker.document({"state": {"secret": "s3cr3t", "note": ""}})
    mask = shown["state"]["secret"]
    # The mask copied into another field stays a mask: it must not carry the value there.
    restored = masker.restore({"secret": mask, "note": mask}, "$.state")
    assert restored == {"secret": "s3cr3t", "note": mask}


# ------------------------------------------------------------------ a real run, end to end


@pytest.fixture
def dispute(operator_user: Any) -> WorkflowRun:
    """A card-dispute run, through the embedded worker, waiting for its reviewer; its
    secrets are in play (every response of the test is scanned for them)."""
    sensitive_scan.in_play(*SECRETS)
    run = services.run_start(workflow_name="card-dispute", input=DISPUTE, user=operator_user)
    settle()
    run.refresh_from_db()
    assert run.status == RunStatus.WAITING, (run.status, run.error_message)
    return run


def pending(run: WorkflowRun) -> ApprovalRequest:
    return ApprovalRequest.objects.get(run=run, status="pending")


def leaks(body: bytes | str) -> list[str]:
    return sensitive_scan.found_in(body, SECRETS)


pytestmark_db = pytest.mark.django_db(transaction=True)


@pytestmark_db
def test_the_values_stay_in_the_checkpoints_and_nowhere_that_is_shown(
    dispute: WorkflowRun,
) -> None:
    latest = documents.checkpoint_document(dispute.latest_checkpoint)
    assert DISPUTE["phone"] in json.dumps(latest)  # the run needs its real data
    assert dispute.input["email"] == DISPUTE["email"]
    for event in RunEvent.objects.filter(run=dispute):
        assert not leaks(json.dumps(event.data)), (event.type, event.data)
    assert not leaks(json.dumps(pending(dispute).request_data))
    for entry in AuditEntry.objects.filter(run_id=dispute.pk):
        assert not leaks(json.dumps(entry.details)), entry.action


@pytestmark_db
def test_pages_and_the_api_show_masks_to_everyone(
    dispute: WorkflowRun, client_as: Callable[..., Client]
) -> None:
    checkpoint = dispute.latest_checkpoint_id
    approval = pending(dispute)
    pages = [
        f"/runs/{dispute.pk}/",
        f"/runs/{dispute.pk}/events/",
        f"/runs/{dispute.pk}/checkpoints/{checkpoint}/",
        f"/runs/{dispute.pk}/checkpoints/{checkpoint}/download/",
        f"/approvals/?request={approval.request_id}",
        f"/api/runs/{dispute.pk}/",
        f"/api/runs/{dispute.pk}/checkpoints/{checkpoint}/",
        f"/api/runs/{dispute.pk}/events/",
        "/api/approvals/",
    ]
    auditor = ["/audit/", "/audit/export/?format=jsonl", "/audit/export/?format=csv"]
    for client, urls in ((client_as("Viewer"), pages), (client_as("Admin"), pages + auditor)):
        for url in urls:
            response = client.get(url)
            assert response.status_code == 200, (url, response.status_code)
            body = b"".join(response) if response.streaming else response.content
            assert not leaks(body), url
    page = client_as("Viewer", username="vic2").get(f"/runs/{dispute.pk}/checkpoints/{checkpoint}/")
    assert b"Sensitive fields" in page.content and masking.MASK_PREFIX.encode() in page.content
    assert b"needs the Sensitive data role" in page.content


@pytestmark_db
def test_revealing_a_field_is_for_those_allowed_and_is_audited(
    dispute: WorkflowRun, client_as: Callable[..., Client]
) -> None:
    checkpoint = dispute.latest_checkpoint_id
    url = f"/runs/{dispute.pk}/reveal/"
    field = {"path": "$.state.contact.phone", "checkpoint_id": checkpoint}
    viewer = client_as("Viewer")
    refused = viewer.post(url, field)
    assert refused.status_code == 403 and not leaks(refused.content)
    assert AuditEntry.objects.filter(action="reveal", outcome=AuditEntry.DENIED).count() == 1

    steward = client_as("Viewer", "Sensitive data", username="sam")
    shown = steward.post(url, field)
    assert shown.status_code == 200 and DISPUTE["phone"] in shown.content.decode()
    assert shown["Cache-Control"] == "no-store"
    entry = AuditEntry.objects.get(action="reveal", outcome=AuditEntry.OK)
    assert entry.actor.username == "sam" and entry.details["path"] == "$.state.contact.phone"
    # The input's fields, by the API, with a token's reveal scope.
    api = steward.post(
        f"/api/runs/{dispute.pk}/reveal/",
        {"path": "$.input.email"},
        content_type="application/json",
    )
    assert api.status_code == 200 and api.json()["value"] == DISPUTE["email"]
    missing = steward.post(url, {"path": "$.input.customer"})
    assert missing.status_code == 404 and b"nothing is masked" in missing.content


@pytestmark_db
def test_a_grant_for_one_workflow_reveals_only_that_workflows_fields(
    dispute: WorkflowRun, role_user: Callable[..., Any]
) -> None:
    from dashboard.models import WorkflowGrant

    user = role_user("gus", "Viewer")
    WorkflowGrant.objects.create(
        user=user, role=role_user.group("Sensitive data"), workflow_name="squares"
    )
    with pytest.raises(services.Forbidden):
        services.reveal(dispute.pk, path="$.input.email", user=user)
    WorkflowGrant.objects.create(
        user=user, role=role_user.group("Sensitive data"), workflow_name="card-dispute"
    )
    user = type(user).objects.get(pk=user.pk)  # grants are read once per user object
    assert services.reveal(dispute.pk, path="$.input.email", user=user).value == DISPUTE["email"]


@pytestmark_db
def test_an_answer_and_the_output_are_masked_once_the_run_finishes(
    dispute: WorkflowRun, approver_user: Any, client_as: Callable[..., Client]
) -> None:
    approval = pending(dispute)
    services.approval_decide(
        approval.request_id,
        user=approver_user,
        approved=True,
        response={"approved": True, "refund_iban": IBAN, "note": "goodwill"},
    )
    settle()
    dispute.refresh_from_db()
    assert dispute.status == RunStatus.COMPLETED and dispute.output["email"] == DISPUTE["email"]
    viewer = client_as("Viewer")
    for url in (
        f"/runs/{dispute.pk}/",
        "/approvals/archive/",
        f"/api/runs/{dispute.pk}/",
        "/api/approvals/?status=approved",
    ):
        response = viewer.get(url)
        assert response.status_code == 200 and not leaks(response.content), url
    assert "goodwill" in viewer.get("/approvals/archive/").content.decode()
    # The run page's live update lists the output's masked field as it arrives.
    from dashboard.web.live.fragments import run_update

    finished = list(RunEvent.objects.filter(run=dispute).order_by("seq"))[-2:]
    redrawn = run_update(dispute.pk, finished, viewer.user)  # type: ignore[attr-defined]
    assert 'data-masked-path="$.output.email"' in redrawn and not leaks(redrawn)


def fork_post(client: Client, run: WorkflowRun, *, phone: str | None = None) -> Any:
    """The fork editor's form as the page showed it (masks and all), with the contact's phone
    changed to ``phone`` when given."""
    page = client.get(fork_pages.page_url(run, run.current_superstep)).content.decode()
    data = fork_pages.post_data(page)
    checkpoint = run.latest_checkpoint_id
    if phone is not None:
        name = fork_pages.form_of(page)["state.contact"]
        shown = json.loads(data[name])
        assert masking.is_mask(shown["phone"]), shown
        data[name] = json.dumps({**shown, "phone": phone})
    return client.post(f"/runs/{run.pk}/checkpoints/{checkpoint}/fork/", data)


@pytestmark_db
def test_a_fork_keeps_masked_fields_unless_its_author_may_see_them(
    dispute: WorkflowRun, client_as: Callable[..., Client]
) -> None:
    operator = client_as("Operator", username="otto")
    kept = fork_post(operator, dispute)
    assert kept.status_code == 302, kept.content.decode()[:2000]
    fork = WorkflowRun.objects.get(parent_run=dispute)
    first = fork.checkpoints.order_by("created_at").first()
    assert first is not None
    assert DISPUTE["phone"] in json.dumps(documents.checkpoint_document(first))

    refused = fork_post(operator, dispute, phone="+1 000")
    assert refused.status_code == 422, refused.status_code  # beside the field, as any refusal
    assert "is sensitive and you may not see it" in refused.content.decode()
    admin = client_as("Admin", username="ada")
    assert fork_post(admin, dispute, phone="+1 000").status_code == 302
    settle()  # the forks run on to their own review


@pytestmark_db
def test_the_scan_fails_a_response_that_shows_a_value_in_play(
    dispute: WorkflowRun, viewer_client: Client
) -> None:
    """The scan every dashboard test's client runs is real: the customer's name is not
    sensitive, so the run page shows it, and once it is in play that page fails the test."""
    assert sensitive_scan.found_in('{"id": "a4242b", "n": "4242"}', ["4242"]) == ["4242"]
    assert sensitive_scan.found_in("a4242b", ["4242"]) == []
    sensitive_scan.in_play(DISPUTE["customer"])
    with pytest.raises(AssertionError, match="answered with sensitive values"):
        viewer_client.get(f"/runs/{dispute.pk}/")
    assert viewer_client.get(f"/runs/{dispute.pk}/reveal/").status_code == 405  # not scanned
