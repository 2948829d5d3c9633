"""``WorkflowAgent``: a workflow seen as a Microsoft Agent Framework agent (``as_agent()``).

An agent call becomes a workflow run: the input messages (with what the session's history
providers add) go to the start executor as one ``list[Message]``; the run's ``output`` and
``intermediate`` events become the agent's answer; its requests become contents the caller
answers in the next call (a ``request_info`` function call, or the agent's own user-input
request as it stands, such as a tool approval). While requests are pending, the next call's
messages must hold only their answers, and they resume the run.

Because the agent runs the workflow it wraps, the workflow's checkpoints hold everything:
``run(checkpoint_id=..., checkpoint_storage=...)`` restores a paused run first, in any
process, then goes on with the call's messages, if any.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, overload

from agent_framework import (
    AgentResponse,
    AgentResponseUpdate,
    AgentSession,
    BaseAgent,
    Content,
    Message,
    ResponseStream,
)
from agent_framework._types import add_usage_details
from agent_framework.exceptions import (
    AgentInvalidRequestException,
    AgentInvalidResponseException,
)

from ..events import RequestInfoEvent, WorkflowEvent, WorkflowRunState
from ..registry import AllowedTypes
from ..typecheck import is_compatible, is_instance_of
from .agent_call import AgentCall
from .agent_updates import (
    FORWARDED_EVENT_TYPES,
    computer_request_id,
    contents_of,
    forwarded_update,
    function_result_answer,
    merge_updates,
    message_update,
    now,
    response_updates,
)

if TYPE_CHECKING:
    from ..executor import Executor
    from ..storage.protocol import CheckpointStorage


class Workflow(Protocol):
    """What a workflow agent needs of the workflow it wraps (``workflows.Workflow`` has it; the
    engine's ``Workflow.as_agent`` builds the agent, so this module does not import it)."""

    name: str
    description: str | None

    @property
    def status(self) -> WorkflowRunState: ...

    @property
    def start_executor(self) -> Executor: ...

    @property
    def pending_requests(self) -> dict[str, RequestInfoEvent]: ...

    # Workflow.run's overloads: a result awaitable, or a stream with stream=True.
    @property
    def run(self) -> Callable[..., Any]: ...


__all__ = ["WorkflowAgent"]

logger = logging.getLogger("workflows")


class WorkflowAgent(BaseAgent):
    """A workflow that answers like an agent. Make one with ``workflow.as_agent()``.

    Args:
        workflow: the workflow; its start executor must take a ``list[Message]``.
        id: the agent id (``WorkflowAgent_<8 hex>`` by default).
        name: the agent name.
        description: the agent description.
        context_providers: MAF context providers; their hooks run around each call and the
            messages they add go to the workflow. Their instructions, tools and middleware do
            not reach the executors: set those on the agents inside.
        kwargs: passed on to MAF's ``BaseAgent``.

    Raises:
        ValueError: the start executor does not take a ``list[Message]``.
    """

    REQUEST_INFO_FUNCTION_NAME: ClassVar[str] = "request_info"

    @dataclass
    class RequestInfoFunctionArgs:
        """The arguments of the ``request_info`` function call a workflow request becomes."""

        request_id: str
        request_event: WorkflowEvent[Any]

        def to_dict(self) -> dict[str, Any]:
            return {"request_id": self.request_id, "request_event": self.request_event.to_dict()}

        @classmethod
        def from_dict(
            cls, payload: dict[str, Any], *, allowed_types: AllowedTypes | None = None
        ) -> WorkflowAgent.RequestInfoFunctionArgs:
            """Rebuild the arguments (a request's data through the checkpoint codec).

            Raises:
                ValueError: ``request_id`` or ``request_event`` is missing or empty.
            """
            if "request_id" not in payload or "request_event" not in payload:
                raise ValueError(
                    "Invalid payload for RequestInfoFunctionArgs. 'request_id' and "
                    "'request_event' are required."
                )
            if not payload["request_id"]:
                raise ValueError("request_id cannot be empty.")
            event = WorkflowEvent.from_dict(payload["request_event"], allowed_types=allowed_types)
            return cls(request_id=payload["request_id"], request_event=event)

    def __init__(
        self,
        workflow: Workflow,
        *,
        id: str | None = None,
        name: str | None = None,
        description: str | None = None,
        context_providers: Sequence[Any] | None = None,
        **kwargs: Any,
    ) -> None:
        start = workflow.start_executor
        if not any(is_compatible(list[Message], t) for t in start.input_types):
            raise ValueError("Workflow's start executor cannot handle list[Message]")
        super().__init__(
            id=id or f"WorkflowAgent_{uuid.uuid4().hex[:8]}",
            name=name,
            description=description,
            context_providers=context_providers,
            **kwargs,
        )
        self._workflow = workflow

    @property
    def workflow(self) -> Workflow:
        return self._workflow

    # ------------------------------------------------------------------------------------ run

    @overload
    def run(
        self,
        messages: Any = None,
        *,
        stream: Literal[False] = ...,
        session: AgentSession | None = None,
        checkpoint_id: str | None = None,
        checkpoint_storage: CheckpointStorage | None = None,
        tools: Any = None,
        function_invocation_kwargs: Any = None,
        client_kwargs: Any = None,
    ) -> Any: ...

    @overload
    def run(
        self,
        messages: Any = None,
        *,
        stream: Literal[True],
        session: AgentSession | None = None,
        checkpoint_id: str | None = None,
        checkpoint_storage: CheckpointStorage | None = None,
        tools: Any = None,
        function_invocation_kwargs: Any = None,
        client_kwargs: Any = None,
    ) -> ResponseStream[AgentResponseUpdate, AgentResponse]: ...

    def run(
        self,
        messages: Any = None,
        *,
        stream: bool = False,
        session: AgentSession | None = None,
        checkpoint_id: str | None = None,
        checkpoint_storage: CheckpointStorage | None = None,
        tools: Any = None,
        function_invocation_kwargs: Any = None,
        client_kwargs: Any = None,
    ) -> Any:
        """Run the workflow on ``messages`` (or answer its pending requests with them).

        Args:
            messages: a prompt, a ``Message``, or a list of them; answers when the workflow
                waits for input. None with ``checkpoint_id`` only restores the run.
            stream: return a ``ResponseStream`` of updates instead of an awaitable response.
            session: the conversation; with one, an in-memory history is kept in it unless a
                history provider is configured.
            checkpoint_id: restore this checkpoint of the workflow first.
            checkpoint_storage: where that checkpoint is (required with ``checkpoint_id``),
                and where this run's checkpoints go.
            tools, function_invocation_kwargs, client_kwargs: as ``Workflow.run``.
        """
        call = AgentCall(
            self,
            messages if messages is not None else [],
            str(uuid.uuid4()),
            session,
            checkpoint_id,
            checkpoint_storage,
            {
                "tools": tools,
                "function_invocation_kwargs": function_invocation_kwargs,
                "client_kwargs": client_kwargs,
            },
        )
        if stream:
            return ResponseStream(call.updates(), finalizer=AgentResponse.from_updates)
        return call.response()

    # --------------------------------------------------------------------- event conversions

    def _to_response(self, response_id: str, events: list[WorkflowEvent[Any]]) -> AgentResponse:
        messages: list[Message] = []
        raw: list[object] = []
        usage = None
        created_at: str | None = None
        for event in events:
            if event.type == "request_info":
                request = self._request_content(event)
                messages.append(
                    Message(
                        contents=[request],
                        role="assistant",
                        author_name=getattr(event, "source_executor_id", None),
                        message_id=str(uuid.uuid4()),
                        raw_representation=event,
                    )
                )
                raw.append(event)
                continue
            data = event.data
            if isinstance(data, AgentResponseUpdate):
                label = "Intermediate" if event.type != "output" else "Output"
                raise AgentInvalidRequestException(
                    f"{label} event with AgentResponseUpdate data cannot be emitted in "
                    "non-streaming mode. Please ensure executors emit AgentResponse for "
                    "non-streaming workflows."
                )
            if isinstance(data, AgentResponse):
                messages.extend(data.messages)
                raw.append(data.raw_representation)
                usage = add_usage_details(usage, data.usage_details)
                if data.created_at and (created_at is None or data.created_at > created_at):
                    created_at = data.created_at
            elif isinstance(data, Message):
                messages.append(data)
                raw.append(data.raw_representation)
            elif isinstance(data, list) and is_instance_of(data, list[Message]):
                messages.extend(data)
                raw.append(data)
            else:
                contents = contents_of(data)
                if contents:
                    messages.append(
                        Message(
                            contents=contents,
                            role="assistant",
                            author_name=event.executor_id,
                            message_id=str(uuid.uuid4()),
                            raw_representation=data,
                        )
                    )
                    raw.append(data)
        return AgentResponse(
            messages=messages,
            response_id=response_id,
            created_at=created_at,
            usage_details=usage,
            raw_representation=raw,
        )

    def _to_updates(self, response_id: str, event: WorkflowEvent[Any]) -> list[AgentResponseUpdate]:
        if event.type not in FORWARDED_EVENT_TYPES:
            return []
        if event.type == "request_info":
            return [
                AgentResponseUpdate(
                    contents=[self._request_content(event)],
                    role="assistant",
                    author_name=self.name,
                    response_id=response_id,
                    message_id=str(uuid.uuid4()),
                    created_at=now(),
                    raw_representation=event,
                )
            ]
        data, author = event.data, event.executor_id
        if isinstance(data, AgentResponseUpdate):
            return [forwarded_update(data, author)]
        if isinstance(data, AgentResponse):
            return response_updates(data, author, response_id)
        if isinstance(data, Message):
            return [message_update(data, author, response_id, new_id=True)]
        if isinstance(data, list) and is_instance_of(data, list[Message]):
            return [message_update(m, author, response_id) for m in data]
        contents = contents_of(data)
        if not contents:
            return []
        return [
            AgentResponseUpdate(
                contents=contents,
                role="assistant",
                author_name=author,
                response_id=response_id,
                message_id=str(uuid.uuid4()),
                created_at=now(),
                raw_representation=data,
            )
        ]

    def _request_content(self, event: WorkflowEvent[Any]) -> Content:
        """A request as the caller sees it: an agent's own user-input request as it is (a tool
        approval, a declaration-only call), anything else as a ``request_info`` function call
        the caller answers with a function result of the same call id."""
        data = event.data
        if isinstance(data, Content) and data.user_input_request and data.type != "text":
            return data
        request_id = getattr(event, "request_id", None) or ""
        arguments = self.RequestInfoFunctionArgs(request_id=request_id, request_event=event)
        return Content.from_function_call(
            call_id=request_id,
            name=self.REQUEST_INFO_FUNCTION_NAME,
            arguments=arguments.to_dict(),
        )

    def _answers(
        self, messages: Sequence[Message], pending: Mapping[str, RequestInfoEvent]
    ) -> dict[str, Any]:
        """The answers the caller's messages hold, by request id.

        Raises:
            AgentInvalidResponseException: something other than an answer, or an answer that
                names no request.
        """
        answers: dict[str, Any] = {}
        for message in messages:
            for content in message.contents:
                if content.type == "function_approval_response":
                    if content.id is None:
                        raise AgentInvalidResponseException(
                            "Function approval response is missing its request ID."
                        )
                    answers[content.id] = content
                elif content.type == "function_result":
                    request_id, answer = function_result_answer(content, pending)
                    answers[request_id] = answer
                elif content.type == "computer_tool_result":
                    answers[computer_request_id(content, pending)] = content
                else:
                    raise AgentInvalidResponseException(
                        "Unexpected content type while awaiting request info responses."
                    )
        return answers

    @staticmethod
    def merge_updates(updates: list[AgentResponseUpdate], response_id: str) -> AgentResponse:
        """Join streamed updates into one response: grouped by response then by message, each
        response's messages in time order, updates belonging to no response last."""
        return merge_updates(updates, response_id)
