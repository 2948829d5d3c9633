"""workflows/chat_types.py: MAF's chat types in checkpoints, a closed list, in their own form."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from typing import Any

import pytest
from agent_framework import (
    AgentResponse,
    AgentResponseUpdate,
    AgentSession,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    Message,
)
from pydantic import BaseModel

from workflows import (
    CheckpointDecodeError,
    CheckpointEncodeError,
    InMemoryCheckpointStorage,
    register_checkpoint_type,
    register_type,
)
from workflows.codec import decode, dumps, encode, loads
from workflows.readable import readable
from workflows.testing import make_checkpoint


def round_trip(value: Any) -> Any:
    return decode(loads(dumps(encode(value))))


class Verdict(BaseModel):
    approved: bool
    reason: str


def test_a_conversation_round_trips_with_every_content_kind() -> None:
    call = Content.from_function_call(call_id="c1", name="refund", arguments={"order": "A1"})
    conversation = [
        Message("user", ["Refund order A1"], author_name="ana"),
        Message("assistant", [call]),
        Message("tool", [Content.from_function_result(call_id="c1", result="refunded")]),
        Message("assistant", [Content.from_function_approval_request(id="a1", function_call=call)]),
        Message("user", [Content.from_uri("https://example.org/r.pdf", media_type="text/plain")]),
        Message("assistant", [Content.from_data(b"\x00\x01", "application/octet-stream")]),
    ]
    restored = round_trip(conversation)
    assert [type(m) for m in restored] == [Message] * 6
    assert [m.to_dict() for m in restored] == [m.to_dict() for m in conversation]
    assert restored[1].contents[0].arguments == {"order": "A1"}
    assert restored[0].author_name == "ana"


@pytest.mark.parametrize(
    "value",
    [
        AgentResponse(
            messages=[Message("assistant", ["ok"])], usage_details={"total_token_count": 3}
        ),
        AgentResponseUpdate(contents=[Content.from_text("tok")], role="assistant", message_id="m"),
        ChatResponse(messages=[Message("assistant", ["ok"])], response_id="r1"),
        ChatResponseUpdate(contents=[Content.from_text("tok")], role="assistant"),
    ],
    ids=["AgentResponse", "AgentResponseUpdate", "ChatResponse", "ChatResponseUpdate"],
)
def test_responses_and_updates_round_trip_as_their_own_class(value: Any) -> None:
    restored = round_trip(value)
    assert type(restored) is type(value)
    assert restored.to_dict() == value.to_dict()


def test_a_session_keeps_its_history_as_messages() -> None:
    session = AgentSession(session_id="s-1")
    history = [Message("user", ["hi"]), Message("assistant", ["yo"])]
    session.state["in_memory"] = {"messages": history}
    restored = round_trip(session)
    assert restored.session_id == "s-1"
    assert [m.text for m in restored.state["in_memory"]["messages"]] == ["hi", "yo"]


def test_a_parsed_structured_output_comes_back_parsed() -> None:
    response = AgentResponse(
        messages=[Message("assistant", ['{"approved": true, "reason": "fine"}'])],
        response_format=Verdict,
    )
    assert response.value == Verdict(approved=True, reason="fine")
    restored = round_trip(response)
    assert restored.value == Verdict(approved=True, reason="fine")


def test_a_datetime_a_content_holds_stays_a_datetime() -> None:
    when = dt.datetime(2026, 12, 2, 9, 30, tzinfo=dt.UTC)
    content = Content.from_text("x", additional_properties={"when": when})
    assert round_trip(content).additional_properties["when"] == when


def test_inside_a_message_extra_properties_are_kept_as_maf_writes_them() -> None:
    # MAF's own form of a message writes its contents' extra properties as JSON (a datetime as
    # its text): that form is what is stored, as MAF's own storages store it.
    when = dt.datetime(2026, 12, 2, 9, 30, tzinfo=dt.UTC)
    message = Message("user", [Content.from_text("x", additional_properties={"when": when})])
    restored = round_trip(message)
    assert restored.to_dict() == message.to_dict()


def test_an_object_maf_hands_over_unserialized_is_refused_naming_where_it_was() -> None:
    content = Content.from_text("x", additional_properties={"db": object()})
    with pytest.raises(CheckpointEncodeError, match=r"\['additional_properties'\]\['db'\]"):
        encode({"pending": [content]}, where="executor 'agent' state key 'pending'")


def test_a_session_state_maf_cannot_serialize_is_an_encode_error() -> None:
    session = AgentSession()
    session.state["custom"] = object()
    with pytest.raises(CheckpointEncodeError, match="AgentSession could not be stored"):
        encode(session)


@pytest.mark.parametrize("name", ["os", "builtins.eval", "subprocess.Popen", "Agent", "message"])
def test_a_name_outside_the_closed_list_is_refused(name: str) -> None:
    with pytest.raises(CheckpointDecodeError, match="not allowed"):
        decode({"$t": "agent", "name": name, "v": {}})


def test_fields_the_class_refuses_are_a_decode_error() -> None:
    with pytest.raises(CheckpointDecodeError, match="Message could not be restored"):
        decode({"$t": "agent", "name": "Message", "v": {"role": "user", "no_such_field": 1}})


def test_a_malformed_agent_tag_is_a_decode_error() -> None:
    with pytest.raises(CheckpointDecodeError, match="malformed"):
        decode({"$t": "agent", "name": "Message", "v": ["not", "a", "dict"]})


def test_a_subclass_of_a_chat_type_is_not_taken_for_it() -> None:
    class MyMessage(Message):
        pass

    with pytest.raises(CheckpointEncodeError, match="MyMessage"):
        encode(MyMessage("user", ["hi"]))


def test_registering_a_chat_type_is_accepted_and_changes_nothing() -> None:
    assert register_type(Message) is Message
    assert register_checkpoint_type(Content) is Content
    assert encode(Message("user", ["hi"]))["$t"] == "agent"


async def test_messages_in_state_restore_from_a_storage() -> None:
    storage = InMemoryCheckpointStorage()
    checkpoint = make_checkpoint(state={"conversation": [Message("user", ["hello"])]})
    await storage.save(checkpoint)
    loaded = await storage.load(checkpoint.checkpoint_id)
    assert loaded.state["conversation"][0].text == "hello"


def test_the_readable_form_names_the_type_and_shows_its_fields() -> None:
    shown = readable(encode(Message("user", ["hi"], author_name="ana")))
    assert shown["$agent"] == "Message"
    assert shown["role"] == "user"
    assert shown["author_name"] == "ana"
    assert shown["contents"][0]["text"] == "hi"
    assert "type" not in shown


def test_importing_the_codec_does_not_import_the_agent_layer() -> None:
    code = (
        "import sys; from workflows import codec; "
        "codec.decode(codec.loads(codec.dumps(codec.encode({'a': [1, (2, 3)]})))); "
        "assert 'agent_framework' not in sys.modules"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_a_stored_chat_type_name_resolves_to_mafs_class_and_look_alikes_do_not() -> None:
    from agent_framework import Content, Message

    from workflows.storage import chat_type_name, resolve_type_name

    assert resolve_type_name("agent_framework._types.Content") is Content
    assert resolve_type_name("agent_framework._types.Message") is Message
    assert chat_type_name(Content) == "Content"
    assert resolve_type_name("agent_framework.other.Content") is None
    assert resolve_type_name("agent_framework._types.Agent") is None
    assert resolve_type_name("somewhere.Content") is None
