"""An agent's conversation reads as a chat on the run and checkpoint pages: who said what, the
tools it called, with their arguments and results, and the approvals it asked for."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from dashboard import services
from dashboard.demo import agents
from dashboard.models import WorkflowRun
from dashboard.renderers import conversation
from dashboard.renderers.conversation import PAGE, Part, conversation_of, conversations_of

Drive = Callable[..., WorkflowRun]


def message(role: str, *contents: dict[str, Any], author: str = "") -> dict[str, Any]:
    return {"type": "message", "role": role, "contents": list(contents), "author_name": author}


def session_state(*messages: dict[str, Any]) -> dict[str, Any]:
    return {
        "cache": [],
        "full_conversation": [],
        "agent_session": {"state": {"in_memory": {"messages": list(messages)}}},
    }


CALL = {
    "type": "function_call",
    "call_id": "c1",
    "name": "refund",
    "arguments": '{"order": "A-17"}',
}


def test_a_session_reads_as_turns_with_calls_results_and_approvals() -> None:
    state = session_state(
        message("user", {"type": "text", "text": "Refund A-17"}),
        message(
            "assistant",
            CALL,
            {"type": "function_approval_request", "function_call": CALL},
            {"type": "usage", "details": {}},
            author="support",
        ),
        message(
            "user", {"type": "function_approval_response", "approved": True, "function_call": CALL}
        ),
        message("tool", {"type": "function_result", "call_id": "c1", "result": "refunded"}),
    )

    chat = conversation_of("support", state)

    assert chat is not None and chat.earlier == 0
    assert [(t.role, t.author) for t in chat.turns] == [
        ("user", "user"),
        ("assistant", "support"),
        ("user", "user"),
        ("tool", "tool"),
    ]
    assert chat.turns[1].parts == (
        Part("call", name="refund", arguments='{\n  "order": "A-17"\n}'),
        Part("approval_request", name="refund", arguments='{\n  "order": "A-17"\n}'),
    )  # usage is bookkeeping, left out
    assert chat.turns[2].parts == (Part("approval_response", name="refund", approved=True),)
    assert chat.turns[3].parts == (Part("result", name="refund", text="refunded"),)


def test_an_approval_shows_its_rejection_reason_and_the_arguments_an_approver_edited() -> None:
    edited = {**CALL, "arguments": {"order": "A-99"}}
    state = session_state(
        message("assistant", {"type": "function_approval_request", "function_call": CALL}),
        message(
            "user",
            {"type": "function_approval_response", "approved": True, "function_call": edited},
            {
                "type": "function_approval_response",
                "approved": False,
                "function_call": CALL,
                "additional_properties": {"reason": "not paid"},
            },
        ),
    )

    chat = conversation_of("support", state)

    assert chat is not None
    assert chat.turns[1].parts == (
        Part(
            "approval_response", name="refund", approved=True, arguments='{\n  "order": "A-99"\n}'
        ),
        Part("approval_response", name="refund", approved=False, text="not paid"),
    )


def test_without_a_session_history_the_executors_own_messages_are_read() -> None:
    tagged = {
        "$t": "agent",
        "name": "Message",
        "v": message("user", {"type": "text", "text": "hi"}),
    }
    chat = conversation_of("a", {"full_conversation": [tagged], "cache": [tagged]})
    assert chat is not None
    assert [part.text for turn in chat.turns for part in turn.parts] == ["hi"]  # once, not twice


def test_states_of_other_executors_are_no_conversation() -> None:
    assert conversation_of("counter", {"count": 3}) is None
    assert conversation_of("counter", ["not", "a", "mapping"]) is None
    assert conversations_of({"counter": {"count": 3}, "support": session_state()}) == [
        conversation_of("support", session_state())
    ]


def test_a_long_thread_shows_its_newest_page_and_counts_the_rest() -> None:
    state = session_state(
        *[message("user", {"type": "text", "text": f"turn {n}"}) for n in range(2000)]
    )
    chat = conversation_of("a", state)
    assert chat is not None
    assert len(chat.turns) == PAGE and chat.earlier == 2000 - PAGE and chat.total == 2000
    assert chat.turns[-1].parts[0].text == "turn 1999"


@pytest.mark.django_db(transaction=True)
def test_the_run_and_checkpoint_pages_show_the_agents_conversation(
    drive: Drive, role_user: Callable[..., Any], client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(agents, "_WORD_DELAY", 0.0)
    operator = role_user("olga", "Operator", "Approver")
    run = drive(
        services.run_start,
        workflow_name="support-refund",
        input="Please refund order A-17 <b>now</b>",
        user=operator,
    )
    client.force_login(operator)

    for url in (f"/runs/{run.pk}/", f"/runs/{run.pk}/checkpoints/{run.latest_checkpoint_id}/"):
        page = client.get(url).content.decode()
        assert "Conversation · support" in page, url
        assert "asks approval for refund_order" in page
        assert "Please refund order A-17 &lt;b&gt;now&lt;/b&gt;" in page
        assert "<b>now</b>" not in page


def test_a_long_conversation_is_folded_in_the_state_trees_and_a_short_one_kept() -> None:
    said = {
        "$t": "agent",
        "name": "Message",
        "v": {"type": "message", "role": "user", "contents": [{"type": "text", "text": "hi"}]},
    }
    state = {"support": {"full_conversation": [said] * 2001, "cache": [said] * 3, "n": [1] * 50}}

    shown = conversation.folded(state)

    assert shown["support"]["full_conversation"] == (
        "2,001 messages: the conversation card reads them as a chat"
    )
    assert shown["support"]["cache"] == [said] * 3 and shown["support"]["n"] == [1] * 50


def test_a_session_whose_state_is_not_an_object_reads_as_the_conversation_it_has() -> None:
    said = {
        "$t": "agent",
        "name": "Message",
        "v": {"type": "message", "role": "user", "contents": [{"type": "text", "text": "yes"}]},
    }
    state = {"agent_session": {"type": "session", "state": "x"}, "full_conversation": [said, said]}

    found = conversation_of("support", state)

    assert found is not None and [t.parts[0].text for t in found.turns] == ["yes", "yes"]
