"""Edit and re-run: the fork editor shows an agent's conversation as its messages, a fork with
an edited prompt (or an edited reply) runs the agents again on the edited text, and the resume
and fork previews say which model calls that asks for again."""

from __future__ import annotations

import html as markup
import re
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from dashboard import services
from dashboard.demo import agents
from dashboard.models import Checkpoint, RunStatus, WorkflowRun
from dashboard.renderers.diff_values import tree
from dashboard.selectors import checkpoint_document, model_calls_after
from dashboard.web.checkpoints.fork_conversation import EDITABLE
from dashboard.web.checkpoints.fork_editor import value_from_tree
from dashboard.web.checkpoints.fork_form import ForkEditor
from tests.helpers.fork_pages import form_of, page_url, post_data
from workflows.storage import decode

pytestmark = pytest.mark.django_db(transaction=True)

Drive = Callable[..., WorkflowRun]
PROMPT = "Write a short report on durable workflows"


@pytest.fixture(autouse=True)
def fast_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(agents, "_WORD_DELAY", 0.0)


@pytest.fixture
def report(operator_client: Client, drive: Drive) -> WorkflowRun:
    run = drive(
        services.run_start,
        workflow_name="research-report",
        input=PROMPT,
        user=operator_client.user,  # type: ignore[attr-defined]
    )
    assert run.status == RunStatus.COMPLETED, run.error_message
    return run


def document_at(run: WorkflowRun, superstep: int) -> dict[str, Any]:
    checkpoint = Checkpoint.objects.filter(run=run, superstep=superstep).get()
    return checkpoint_document(checkpoint)


def messages_fields(editor: ForkEditor, section: str = "messages") -> list[tuple[str, str, str]]:
    """The message texts of one section of the editor: path, who said it, text."""
    return [
        (item.dotted, item.label, item.text)
        for group in editor.groups
        if group.section == section
        for item in group.fields
        if item.widget == "message"
    ]


def text_of(message: Any) -> str:
    return "".join(getattr(content, "text", "") or "" for content in message.contents)


def test_the_prompt_in_flight_is_a_message_to_edit_not_a_json_tree(report: WorkflowRun) -> None:
    editor = ForkEditor(document_at(report, 1))

    [group] = [g for g in editor.groups if g.section == "messages"]
    assert group.chat and "a conversation" in group.note
    assert messages_fields(editor) == [("messages.0.data.0.v.contents.0.text", "user", PROMPT)]
    assert all(item.widget != "textarea" for item in group.fields)


def test_an_edited_prompt_changes_only_that_text(report: WorkflowRun) -> None:
    document = document_at(report, 1)
    editor = ForkEditor(document)
    [field] = [item for item in editor.fields if item.widget == "message"]

    edited = ForkEditor(document, {field.name: "Write about tide pools"})
    edits = edited.read()

    assert edits is not None and edits.state is None and edits.executor_states is None
    assert edited.changes(edits) == [f"message 1 · user: “{PROMPT}” → “Write about tide pools”"]
    assert edits.messages is not None
    [message] = decode(edits.messages[0]["data"])
    assert message.role == "user" and text_of(message) == "Write about tide pools"
    original = document["messages"][0]["data"][0]["v"]
    edited = edits.messages[0]["data"][0]["v"]
    assert {k: v for k, v in edited.items() if k != "contents"} == {
        k: v for k, v in original.items() if k != "contents"
    }


def test_an_edited_reply_is_edited_everywhere_the_next_agent_reads_it(report: WorkflowRun) -> None:
    # After the researcher's turn its reply is in flight twice: as the agent's response, and
    # at the end of the conversation the writer reads.
    document = document_at(report, 2)
    editor = ForkEditor(document)
    shown = messages_fields(editor)
    assert [label for _, label, _ in shown] == [
        "agent_response · researcher (assistant)",
        "full_conversation · user",
        "full_conversation · researcher (assistant)",
    ]
    reply = next(item for item in editor.fields if item.label.startswith("full_conversation · r"))

    edited = ForkEditor(document, {reply.name: "Tide pools are small worlds."})
    edits = edited.read()

    assert edits is not None and edits.messages is not None
    [line] = edited.changes(edits)  # the copy in agent_response is the same message
    assert line.startswith("message 1 · full_conversation · researcher (assistant): “researcher:")
    assert line.endswith("→ “Tide pools are small worlds.”")
    response = decode(edits.messages[0]["data"])
    assert text_of(response.full_conversation[-1]) == "Tide pools are small worlds."
    assert text_of(response.agent_response.messages[0]) == "Tide pools are small worlds."
    assert text_of(response.full_conversation[0]) == PROMPT


def test_an_agents_memory_reads_as_messages_and_tools_as_notes(
    operator_client: Client, drive: Drive
) -> None:
    run = drive(
        services.run_start,
        workflow_name="support-refund",
        input="Please refund order A-17, it arrived broken",
        user=operator_client.user,  # type: ignore[attr-defined]
    )
    assert run.status == RunStatus.WAITING, run.error_message
    editor = ForkEditor(checkpoint_document(run.latest_checkpoint))

    groups = {group.title: group for group in editor.groups if group.chat}
    assert "support · full_conversation" in groups
    notes = [item.text for item in editor.fields if item.widget == "note"]
    assert any(note.startswith("calls ") and "A-17" in note for note in notes), notes
    assert all(
        item.widget == "note" or item.widget == "message"
        for g in groups.values()
        for item in g.fields
    )


def test_a_long_conversation_shows_its_newest_messages_and_counts_the_rest() -> None:
    message = {
        "$t": "agent",
        "name": "Message",
        "v": {"type": "message", "role": "user", "contents": [{"type": "text", "text": "hi"}]},
    }
    document = {
        "messages": [{"source": "a", "target": "b", "kind": "standard", "data": [message] * 2000}]
    }

    editor = ForkEditor(document)

    [group] = editor.groups
    assert group.earlier == 2000 - EDITABLE and len(group.fields) == EDITABLE
    assert group.fields[0].dotted == f"messages.0.data.{2000 - EDITABLE}.v.contents.0.text"


def test_a_fork_with_an_edited_prompt_gives_a_different_answer(
    operator_client: Client, report: WorkflowRun
) -> None:
    from dashboard.execution import embedded

    url = page_url(report, 1)
    page = operator_client.get(url).content.decode()
    assert "data-fork-message" in page and markup.escape(PROMPT) in page
    [path] = [p for p in form_of(page) if p.endswith("contents.0.text")]

    review = operator_client.post(
        url + "fork/check/", post_data(page, **{path.replace(".", "__"): "Write about tide pools"})
    )
    assert review.status_code == 200
    shown = markup.unescape(review.content.decode())
    assert re.search(
        r"Model calls that may run again in the fork: researcher \(superstep-local, "
        r"1 call\), writer \(superstep-local, 1 call\), editor \(superstep-local, "
        r"1 call\): [\d,]+ tokens last time\.",
        shown,
    ), shown

    answer = operator_client.post(
        url + "fork/", post_data(page, **{path.replace(".", "__"): "Write about tide pools"})
    )

    assert answer.status_code == 302
    fork = WorkflowRun.objects.exclude(pk=report.pk).get()
    assert embedded.wait_for_background_tasks(60)
    fork.refresh_from_db()
    assert fork.status == RunStatus.COMPLETED, fork.error_message
    before, after = decode(report.output), decode(fork.output)
    assert "tide pools" in str(after) and "tide pools" not in str(before)
    assert PROMPT not in str(after)


def test_model_calls_are_counted_after_the_checkpoint_that_committed_them(
    report: WorkflowRun,
) -> None:
    assert [c.executor_id for c in model_calls_after(report.pk, 0)] == [
        "researcher",
        "writer",
        "editor",
    ]
    assert [c.executor_id for c in model_calls_after(report.pk, 2)] == ["writer", "editor"]
    assert model_calls_after(report.pk, report.current_superstep) == []


def test_a_message_text_no_database_can_store_is_refused(
    operator_client: Client, report: WorkflowRun
) -> None:
    url = page_url(report, 1)
    page = operator_client.get(url).content.decode()
    [path] = [p for p in form_of(page) if p.endswith("contents.0.text")]

    answer = operator_client.post(
        url + "fork/", post_data(page, **{path.replace(".", "__"): "a NUL \x00 no database stores"})
    )

    assert answer.status_code == 422
    assert WorkflowRun.objects.count() == 1
    assert "nul" in answer.content.decode().lower()


def test_the_resume_preview_names_the_model_calls_that_run_again(
    operator_client: Client, report: WorkflowRun
) -> None:
    page = markup.unescape(operator_client.get(page_url(report, 2)).content.decode())

    assert "Model calls that run again: writer (superstep-local, 1 call), editor" in page
    assert "researcher (superstep-local" not in page.split("Model calls that run again:")[1][:200]


def test_a_maf_value_edited_as_json_stays_a_maf_value() -> None:
    reply = {
        "$t": "agent",
        "name": "Message",
        "v": {"type": "message", "role": "assistant", "contents": [{"type": "text", "text": "a"}]},
    }
    shown = tree(reply)
    shown["contents"][0]["text"] = "b"

    edited = value_from_tree(shown, reply)

    assert edited == {**reply, "v": {**reply["v"], "contents": [{"type": "text", "text": "b"}]}}
    assert text_of(decode(edited)) == "b"


def test_a_superstep_run_again_counts_its_model_calls_once(
    operator_client: Client, report: WorkflowRun, drive: Drive
) -> None:
    first = Checkpoint.objects.filter(run=report, superstep=1).get()
    resumed = drive(
        services.run_resume,
        report.pk,
        checkpoint_id=first.checkpoint_id,
        user=operator_client.user,  # type: ignore[attr-defined]
        reason="once more",
    )
    assert resumed.status == RunStatus.COMPLETED, resumed.error_message

    calls = model_calls_after(report.pk, 1)

    assert [(c.executor_id, c.calls) for c in calls] == [
        ("researcher", 1),
        ("writer", 1),
        ("editor", 1),
    ]


def test_two_copies_of_a_reply_edited_apart_keep_each_its_own_edit(report: WorkflowRun) -> None:
    document = document_at(report, 2)
    editor = ForkEditor(document)
    response = next(i for i in editor.fields if i.label.startswith("agent_response · r"))
    reply = next(i for i in editor.fields if i.label.startswith("full_conversation · r"))

    edited = ForkEditor(document, {response.name: "AAA", reply.name: "BBB"})
    edits = edited.read()

    assert edits is not None and edits.messages is not None
    fork = decode(edits.messages[0]["data"])
    assert text_of(fork.agent_response.messages[0]) == "AAA"
    assert text_of(fork.full_conversation[-1]) == "BBB"
    assert len(edited.changes(edits)) == 2


def test_a_message_edited_as_json_is_listed_in_the_confirmation() -> None:
    said = {
        "$t": "agent",
        "name": "Message",
        "v": {"type": "message", "role": "user", "contents": [{"type": "text", "text": "10"}]},
    }
    document = {"state": {"last": said}}
    editor = ForkEditor(document)
    [field] = [item for item in editor.fields if item.dotted == "state.last.contents"]

    edited = ForkEditor(document, {field.name: '[{"type": "text", "text": "10000"}]'})
    edits = edited.read()

    assert edits is not None and edits.state is not None
    assert edited.changes(edits) == ['shared state.last.contents[0].text: "10" → "10000"']
