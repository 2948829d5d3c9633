"""``FunctionalWorkflowAgent``: a functional workflow seen as a Microsoft Agent Framework agent.

``FunctionalWorkflow.as_agent()`` makes one. An agent call is a run call: its input is the
run's message, each ``output`` becomes an assistant message (text as it is, a ``Content`` as it
is, anything else as its ``str``), and each ``request_info`` becomes a function-approval request
(a ``request_info`` function call carrying the request id and its data in JSON form) that the
caller answers with ``run(responses={request_id: value})``, as for the workflow itself.

This module imports ``agent_framework``; ``import workflows`` does not load it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, overload

from agent_framework import (
    AgentResponse,
    AgentResponseUpdate,
    BaseAgent,
    Content,
    Message,
    ResponseStream,
)
from agent_framework._serialization import make_json_safe

from ..events import RequestInfoEvent, WorkflowEvent
from ..result import WorkflowRunResult

if TYPE_CHECKING:
    from ..storage.protocol import CheckpointStorage

__all__ = ["FunctionalWorkflowAgent"]


class _Runnable(Protocol):
    """What the agent needs of the workflow it wraps (``FunctionalWorkflow`` has it)."""

    name: str
    description: str | None

    @property
    def run(self) -> Callable[..., Any]: ...


class FunctionalWorkflowAgent(BaseAgent):
    """A ``FunctionalWorkflow`` as an agent (``as_agent()``): ``run()`` returns an
    ``AgentResponse``, or with ``stream=True`` a ``ResponseStream`` of ``AgentResponseUpdate``.

    The workflow holds the run state, so one agent serves one caller, as its workflow does.

    Args:
        workflow: the workflow to wrap.
        name: the agent's name (the workflow's by default); its id is
            ``FunctionalWorkflowAgent_<name>``.
        description: the agent's description (the workflow's by default).
        context_providers: MAF context providers, kept on the agent.
        kwargs: accepted for parity with the graph ``WorkflowAgent``; not used.
    """

    REQUEST_INFO_FUNCTION_NAME: ClassVar[str] = "request_info"

    def __init__(
        self,
        workflow: _Runnable,
        *,
        name: str | None = None,
        description: str | None = None,
        context_providers: Sequence[Any] | None = None,
        **kwargs: Any,
    ) -> None:
        named = name or workflow.name
        super().__init__(
            id=f"FunctionalWorkflowAgent_{named}",
            name=named,
            description=description if description is not None else workflow.description,
            context_providers=context_providers,
        )
        self._workflow = workflow
        self._pending: dict[str, WorkflowEvent[Any]] = {}

    @property
    def pending_requests(self) -> dict[str, WorkflowEvent[Any]]:
        """The requests of the last call that wait for an answer, by request id."""
        return self._pending

    @overload
    def run(
        self,
        messages: Any | None = None,
        *,
        stream: Literal[True],
        responses: dict[str, Any] | None = None,
        checkpoint_id: str | None = None,
        checkpoint_storage: CheckpointStorage | None = None,
        **kwargs: Any,
    ) -> ResponseStream[AgentResponseUpdate, AgentResponse]: ...

    @overload
    def run(
        self,
        messages: Any | None = None,
        *,
        stream: Literal[False] = False,
        responses: dict[str, Any] | None = None,
        checkpoint_id: str | None = None,
        checkpoint_storage: CheckpointStorage | None = None,
        **kwargs: Any,
    ) -> Awaitable[AgentResponse]: ...

    def run(
        self,
        messages: Any | None = None,
        *,
        stream: bool = False,
        responses: dict[str, Any] | None = None,
        checkpoint_id: str | None = None,
        checkpoint_storage: CheckpointStorage | None = None,
        **kwargs: Any,
    ) -> ResponseStream[AgentResponseUpdate, AgentResponse] | Awaitable[AgentResponse]:
        """Run the workflow and answer as an agent.

        Args:
            messages: the workflow's input.
            stream: return a stream of updates instead of an awaitable response.
            responses: answers to pending requests, by request id.
            checkpoint_id: a checkpoint to resume from.
            checkpoint_storage: the storage for this call.
            kwargs: passed on to the workflow's ``run()``.

        Returns:
            An awaitable ``AgentResponse``, or a ``ResponseStream`` with ``stream=True``.
        """
        given = {
            "responses": responses,
            "checkpoint_id": checkpoint_id,
            "checkpoint_storage": checkpoint_storage,
            **kwargs,
        }
        if stream:
            self._pending = {}
            events = self._workflow.run(messages, stream=True, **given)
            return ResponseStream(self._updates(events), finalizer=AgentResponse.from_updates)
        return self._respond(messages, given)

    async def _respond(self, messages: Any, given: dict[str, Any]) -> AgentResponse:
        result: WorkflowRunResult = await self._workflow.run(messages, **given)
        self._pending = {}
        answer = [Message("assistant", [_content(output)]) for output in result.get_outputs()]
        approvals = [self._approval(event) for event in result.get_request_info_events()]
        if approvals:
            answer.append(Message("assistant", approvals))
        return AgentResponse(messages=answer)

    async def _updates(self, events: AsyncIterator[WorkflowEvent]) -> AsyncIterator[Any]:
        async for event in events:
            if event.type == "output":
                contents = [_content(event.data)]
            elif isinstance(event, RequestInfoEvent) and event.request_id:
                contents = [self._approval(event)]
            else:
                continue
            yield AgentResponseUpdate(contents=contents, role="assistant", author_name=self.name)

    def _approval(self, event: RequestInfoEvent) -> Content:
        """A request as the function-approval request a caller of an agent understands."""
        rid = event.request_id
        self._pending[rid] = event
        call = Content.from_function_call(
            call_id=rid,
            name=self.REQUEST_INFO_FUNCTION_NAME,
            arguments={"request_id": rid, "data": make_json_safe(event.data)},
        )
        return Content.from_function_approval_request(
            id=rid, function_call=call, additional_properties={"request_id": rid}
        )


def _content(output: Any) -> Content:
    if isinstance(output, Content):
        return output
    return Content.from_text(text=output if isinstance(output, str) else str(output))
