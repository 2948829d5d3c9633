"""The offline chat clients under MAF's real ``Agent``: replies, streaming, tools, approvals,
declaration-only tools, structured output, errors, and the same ids on every run."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any, Literal

import jsonschema
import pytest
from agent_framework import Agent, AgentResponse, Content, FunctionTool, Message, tool
from pydantic import BaseModel, Field

from workflows.agents.local_chat import (
    LocalChatClient,
    ScriptedChatClient,
    ScriptExhaustedError,
    ToolCall,
)

# region Tools and models the tests share


def weather_tool(log: list[str]) -> FunctionTool:
    @tool
    def get_weather(city: str) -> str:
        """Get the weather forecast for a city."""
        log.append(f"weather:{city}")
        return f"sunny in {city}"

    return get_weather


def time_tool(log: list[str]) -> FunctionTool:
    @tool
    def get_time(zone: str) -> str:
        """Get the current time in a time zone."""
        log.append(f"time:{zone}")
        return "noon"

    return get_time


def delete_tool(log: list[str]) -> FunctionTool:
    @tool(approval_mode="always_require")
    def delete_file(path: str) -> str:
        """Delete a file from the disk."""
        log.append(f"delete:{path}")
        return f"deleted {path}"

    return delete_file


def ask_person_tool() -> FunctionTool:
    # No func: a declaration-only tool, answered by a person, not by MAF.
    return FunctionTool(
        name="ask_person",
        description="Ask a person a question and wait for the answer.",
        input_model={
            "type": "object",
            "properties": {"question": {"type": "string"}},
            "required": ["question"],
        },
    )


class Verdict(BaseModel):
    label: str
    score: float


class Address(BaseModel):
    street: str
    country: Literal["FR", "DE", "IT"]


class Booking(BaseModel):
    guest: str = Field(max_length=20)
    nights: int = Field(ge=2, le=14)
    breakfast: bool
    address: Address
    tags: list[str] = Field(min_length=2)
    note: str | None = None


def texts(response: AgentResponse[Any]) -> list[str]:
    return [message.text for message in response.messages]


# endregion

# region ScriptedChatClient


async def test_plain_reply_with_usage_and_ids() -> None:
    client = ScriptedChatClient(["Hello there, friend."])
    agent = Agent(client, name="greeter")

    response = await agent.run("hi you")

    assert response.text == "Hello there, friend."
    assert response.messages[0].author_name == "greeter"
    assert response.messages[0].message_id == "scripted-message-1"
    assert response.response_id == "scripted-response-1"
    assert response.usage_details == {
        "input_token_count": 2,
        "output_token_count": 3,
        "total_token_count": 5,
    }
    assert [[m.text for m in call] for call in client.calls] == [["hi you"]]
    assert client.options_seen[0]["model"] == "scripted"
    assert client.remaining == 0


async def test_get_response_directly_names_the_model() -> None:
    client = ScriptedChatClient(["one two"], name="double")

    response = await client.get_response([Message("user", ["hello"])])

    assert response.text == "one two"
    assert response.model == "double"
    assert client.model_id == "double"
    assert response.finish_reason == "stop"
    assert response.usage_details is not None
    assert response.usage_details["total_token_count"] == 3


async def test_streaming_chunks_join_to_the_full_text_and_usage_arrives() -> None:
    reply = "  The quick brown fox  jumps over the lazy dog. "
    client = ScriptedChatClient([reply], chunk_words=2)
    stream = Agent(client).run("tell me a story", stream=True)

    updates = [update async for update in stream]
    final = await stream.get_final_response()

    chunks = [update.text for update in updates if update.text]
    assert "".join(chunks) == reply
    assert len(chunks) == 5
    assert {update.message_id for update in updates} == {"scripted-message-1"}
    usage = [c for update in updates for c in update.contents if c.type == "usage"]
    assert [c.usage_details for c in usage] == [
        {"input_token_count": 4, "output_token_count": 9, "total_token_count": 13}
    ]
    assert final.text == reply
    assert final.usage_details == usage[0].usage_details


async def test_usage_can_be_left_out() -> None:
    client = ScriptedChatClient(["a b", "c d", "e"], usage=False)
    agent = Agent(client)

    response = await agent.run("x")
    stream = agent.run("y", stream=True)
    updates = [update async for update in stream]

    assert not response.usage_details
    assert not (await client.get_response([Message("user", ["z"])])).usage_details
    assert not [c for update in updates for c in update.contents if c.type == "usage"]
    assert (await stream.get_final_response()).text == "c d"


async def test_a_tool_call_is_run_by_maf_and_answered() -> None:
    log: list[str] = []
    client = ScriptedChatClient(
        [ToolCall("get_weather", {"city": "Paris"}), "It is sunny in Paris."]
    )
    agent = Agent(client, tools=[weather_tool(log)])

    response = await agent.run("What is the weather in Paris?")

    assert response.text == "It is sunny in Paris."
    assert log == ["weather:Paris"]
    assert len(client.calls) == 2
    result = client.calls[1][-1]
    assert result.role == "tool"
    assert [(c.type, c.call_id, c.result) for c in result.contents] == [
        ("function_result", "scripted-call-1-1", "sunny in Paris")
    ]
    assert [t.name for t in client.options_seen[0]["tools"]] == ["get_weather"]


async def test_parallel_tool_calls_in_one_reply_while_streaming() -> None:
    log: list[str] = []
    client = ScriptedChatClient(
        [
            [
                ToolCall("get_weather", {"city": "Rome"}, call_id="a"),
                ToolCall("get_time", {"zone": "UTC"}),
            ],
            lambda messages, options: f"{len(messages[-1].contents)} results",
        ]
    )
    agent = Agent(client, tools=[weather_tool(log), time_tool(log)])
    stream = agent.run("weather and time", stream=True)

    updates = [update async for update in stream]
    final = await stream.get_final_response()

    calls = [c for u in updates for c in u.contents if c.type == "function_call"]
    assert [(c.name, c.call_id) for c in calls] == [
        ("get_weather", "a"),
        ("get_time", "scripted-call-1-2"),
    ]
    assert sorted(log) == ["time:UTC", "weather:Rome"]
    assert final.text == "2 results"


async def test_approval_required_tool_asks_then_runs_when_approved() -> None:
    log: list[str] = []
    client = ScriptedChatClient([ToolCall("delete_file", {"path": "/tmp/x"}), "Deleted it."])
    agent = Agent(client, tools=[delete_tool(log)])
    session = agent.create_session()

    asked = await agent.run("Please delete /tmp/x", session=session)

    [request] = asked.user_input_requests
    assert request.type == "function_approval_request"
    assert request.function_call is not None
    assert request.function_call.name == "delete_file"
    assert log == []

    answer = Message("user", [request.to_function_approval_response(approved=True)])
    done = await agent.run(answer, session=session)

    assert done.text == "Deleted it."
    assert log == ["delete:/tmp/x"]
    assert len(client.calls) == 2
    assert client.calls[1][-1].contents[0].result == "deleted /tmp/x"


async def test_declaration_only_tool_comes_back_as_a_user_input_request() -> None:
    client = ScriptedChatClient([ToolCall("ask_person", {"question": "Proceed?"}), "Thanks."])
    agent = Agent(client, tools=[ask_person_tool()])
    session = agent.create_session()

    asked = await agent.run("start", session=session)

    [request] = asked.user_input_requests
    assert (request.type, request.name, request.arguments) == (
        "function_call",
        "ask_person",
        {"question": "Proceed?"},
    )
    assert request.call_id is not None
    answer = Message("tool", [Content.from_function_result(request.call_id, result="yes")])
    done = await agent.run(answer, session=session)

    assert done.text == "Thanks."
    assert client.calls[1][-1].contents[0].result == "yes"


async def test_structured_output_from_a_dict_and_a_model() -> None:
    client = ScriptedChatClient([{"label": "spam", "score": 0.9}, Verdict(label="ham", score=0.1)])
    agent = Agent(client, default_options={"response_format": Verdict})

    first = await agent.run("classify this")
    second = await agent.run("and this", options={"response_format": Verdict})

    assert first.value == Verdict(label="spam", score=0.9)
    assert second.value == Verdict(label="ham", score=0.1)
    assert client.options_seen[0]["response_format"] is Verdict


async def test_structured_output_while_streaming() -> None:
    client = ScriptedChatClient([{"label": "spam", "score": 1.0}], chunk_words=1)
    stream = Agent(client).run("classify", stream=True, options={"response_format": Verdict})

    chunks = [update.text async for update in stream if update.text]
    final = await stream.get_final_response()

    assert len(chunks) == 4
    assert final.value == Verdict(label="spam", score=1.0)


async def test_callable_entries_see_the_conversation_and_may_be_async() -> None:
    async def shout(messages: list[Message], options: Mapping[str, Any]) -> str:
        await asyncio.sleep(0)
        return messages[-1].text.upper()

    def ask_time(messages: list[Message], options: Mapping[str, Any]) -> ToolCall:
        return ToolCall("get_time", {"zone": messages[-1].text.split()[-1]})

    client = ScriptedChatClient([shout, ask_time, "It is noon."])
    log: list[str] = []
    agent = Agent(client, tools=[time_tool(log)])

    assert (await agent.run("quiet please")).text == "QUIET PLEASE"
    assert (await agent.run("what time is it in CET")).text == "It is noon."
    assert log == ["time:CET"]


async def test_exception_entries_raise() -> None:
    client = ScriptedChatClient([RuntimeError("model is down"), ValueError("stream broke")])
    agent = Agent(client)

    with pytest.raises(RuntimeError, match="model is down"):
        await agent.run("hi")
    with pytest.raises(ValueError, match="stream broke"):
        async for _ in agent.run("hi", stream=True):
            pass


async def test_running_out_of_script_names_the_calls_made() -> None:
    client = ScriptedChatClient(["only reply"])
    agent = Agent(client)
    await agent.run("one")

    with pytest.raises(
        ScriptExhaustedError, match=r"model call 2.*only 1 entries \(2 calls made\)"
    ):
        await agent.run("two")
    assert issubclass(ScriptExhaustedError, AssertionError)
    assert len(client.calls) == 2


async def test_recorded_calls_are_copies() -> None:
    client = ScriptedChatClient(["ok"])
    message = Message("user", ["original"])

    await client.get_response([message])
    message.contents[0].text = "changed"

    assert client.calls[0][0].text == "original"


async def test_concurrent_agents_on_one_client_get_distinct_replies_and_ids() -> None:
    client = ScriptedChatClient([lambda messages, options: messages[-1].text] * 6)
    agents = [Agent(client, name=f"agent{i}") for i in range(6)]

    responses = await asyncio.gather(*(a.run(f"prompt {i}") for i, a in enumerate(agents)))

    assert [r.text for r in responses] == [f"prompt {i}" for i in range(6)]
    assert sorted(r.response_id or "" for r in responses) == sorted(
        f"scripted-response-{n}" for n in range(1, 7)
    )
    assert client.remaining == 0


# endregion

# region LocalChatClient


async def test_local_model_picks_the_tool_by_word_overlap() -> None:
    log: list[str] = []
    agent = Agent(LocalChatClient(), tools=[time_tool(log), weather_tool(log)])

    response = await agent.run("What will the weather forecast be in Paris?")

    prompt = "What will the weather forecast be in Paris?"
    assert log == [f"weather:{prompt}"]
    assert response.text == f"Based on get_weather: sunny in {prompt}"
    call = response.messages[0].contents[0]
    assert (call.type, call.name, call.call_id) == (
        "function_call",
        "get_weather",
        "local-call-1-1",
    )


async def test_local_model_ties_go_to_the_first_tool_offered() -> None:
    log: list[str] = []
    agent = Agent(LocalChatClient(), tools=[time_tool(log), weather_tool(log)])

    await agent.run("Hello!")

    assert log == ["time:Hello!"]


async def test_local_model_synthesises_schema_valid_arguments() -> None:
    seen: list[Booking] = []

    @tool
    def book_room(booking: Booking, urgent: bool, rooms: list[int]) -> str:
        """Book a hotel room for a guest."""
        # MAF hands a nested model over as the JSON object the model sent.
        parsed = Booking.model_validate(booking)
        seen.append(parsed)
        return f"booked {parsed.nights} nights"

    long_prompt = "Book a hotel room for " + "a very long stay " * 10
    agent = Agent(LocalChatClient(), tools=[weather_tool([]), book_room])

    response = await agent.run(long_prompt)

    arguments = response.messages[0].contents[0].arguments
    assert isinstance(arguments, dict)
    jsonschema.validate(arguments, book_room.parameters())
    assert arguments["urgent"] is True and arguments["rooms"] == [1]
    [booking] = seen
    assert booking.nights == 2 and booking.address.country == "FR"
    assert booking.guest == long_prompt[:20] and len(booking.tags) == 2
    assert response.text == "Based on book_room: booked 2 nights"


async def test_local_model_structured_output_validates() -> None:
    agent = Agent(LocalChatClient(), default_options={"response_format": Booking})

    response = await agent.run("A quiet room near the sea")

    assert isinstance(response.value, Booking)
    assert response.value.address.street == "A quiet room near the sea"
    jsonschema.validate(response.value.model_dump(mode="json"), Booking.model_json_schema())


async def test_local_model_structured_output_from_a_json_schema_dict() -> None:
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string"}, "confidence": {"type": "number"}},
        "required": ["answer", "confidence"],
    }
    agent = Agent(LocalChatClient())

    response = await agent.run("Is it raining?", options={"response_format": schema})

    assert response.value == {"answer": "Is it raining?", "confidence": 1}


async def test_local_model_answers_tool_results_in_the_requested_format() -> None:
    log: list[str] = []
    agent = Agent(LocalChatClient(), tools=[weather_tool(log)])

    response = await agent.run("weather in Oslo", options={"response_format": Verdict})

    assert response.value == Verdict(
        label="Based on get_weather: sunny in weather in Oslo", score=1
    )


async def test_local_model_digests_the_last_user_message() -> None:
    words = " ".join(f"w{i}" for i in range(40))
    named = Agent(LocalChatClient(), name="writer")
    unnamed = Agent(LocalChatClient())

    assert (await named.run("Write a poem about the sea")).text == (
        "writer: I read: Write a poem about the sea"
    )
    expected = "assistant: I read: " + " ".join(f"w{i}" for i in range(30))
    assert (await unnamed.run(words)).text == expected


async def test_local_model_respects_tool_choice_none() -> None:
    log: list[str] = []
    agent = Agent(LocalChatClient(), name="quiet", tools=[weather_tool(log)])

    response = await agent.run("weather in Lima", options={"tool_choice": "none"})

    assert log == []
    assert response.text == "quiet: I read: weather in Lima"


async def test_local_model_approval_and_declaration_only_flows() -> None:
    log: list[str] = []
    agent = Agent(LocalChatClient(), tools=[delete_tool(log)])
    session = agent.create_session()
    asked = await agent.run("delete the file", session=session)
    [request] = asked.user_input_requests
    answer = Message("user", [request.to_function_approval_response(approved=True)])
    done = await agent.run(answer, session=session)
    assert log == ["delete:delete the file"]
    assert done.text == "Based on delete_file: deleted delete the file"

    person = Agent(LocalChatClient(), tools=[ask_person_tool()])
    session = person.create_session()
    [question] = (await person.run("Should we ship?", session=session)).user_input_requests
    assert (question.name, question.arguments) == ("ask_person", {"question": "Should we ship?"})
    assert question.call_id is not None
    reply = Message("tool", [Content.from_function_result(question.call_id, result="Ship it")])
    assert (await person.run(reply, session=session)).text == "Based on ask_person: Ship it"


async def test_local_model_streams_word_chunks_with_usage() -> None:
    stream = Agent(LocalChatClient(chunk_words=3), name="bot").run("one two three", stream=True)

    updates = [update async for update in stream]
    final = await stream.get_final_response()

    chunks = [update.text for update in updates if update.text]
    assert chunks == ["bot: I read: ", "one two three"]
    assert final.text == "bot: I read: one two three"
    assert final.usage_details == {
        "input_token_count": 3,
        "output_token_count": 6,
        "total_token_count": 9,
    }


async def test_local_model_delay_is_cancellable() -> None:
    agent = Agent(LocalChatClient(delay=30.0))

    async def consume() -> None:
        async for _ in agent.run("a slow answer", stream=True):
            pass

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.05)
    started = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - started < 1.0


async def test_local_model_delay_slows_each_chunk() -> None:
    agent = Agent(LocalChatClient(delay=0.02))
    started = time.monotonic()

    texts_seen = [u.text async for u in agent.run("a b c d", stream=True) if u.text]

    assert len(texts_seen) == 7
    assert time.monotonic() - started >= 7 * 0.02


# endregion

# region Determinism


async def _transcript(client_factory: Any) -> list[Any]:
    """Everything observable of one scenario: texts, ids and usage of every message."""
    log: list[str] = []
    agent = Agent(client_factory(), name="det", tools=[weather_tool(log), delete_tool(log)])
    session = agent.create_session()
    first = await agent.run("weather in Paris", session=session)
    stream = agent.run("delete the old file", stream=True, session=session)
    _ = [update async for update in stream]
    second = await stream.get_final_response()
    answers = [r.to_function_approval_response(approved=True) for r in second.user_input_requests]
    third = await agent.run(Message("user", answers), session=session)
    return [
        (
            r.response_id,
            r.usage_details,
            [(m.message_id, m.role, m.text) for m in r.messages],
            [(c.type, c.call_id, c.id) for m in r.messages for c in m.contents],
        )
        for r in (first, second, third)
    ] + [log]


async def test_same_conversation_same_texts_and_ids() -> None:
    for factory in (
        LocalChatClient,
        lambda: ScriptedChatClient(
            [
                ToolCall("get_weather", {"city": "Paris"}),
                "Sunny.",
                ToolCall("delete_file", {"path": "old"}),
                "Gone.",
            ]
        ),
    ):
        first, second = await _transcript(factory), await _transcript(factory)
        assert first == second
        assert "af-call" not in repr(first)


# endregion
