"""One call of a workflow agent: the session's context providers before, the workflow run
(resumed from a checkpoint first when asked), the providers after."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from agent_framework import (
    AgentResponse,
    AgentResponseUpdate,
    AgentSession,
    InMemoryHistoryProvider,
    Message,
)
from agent_framework._sessions import HistoryProvider, SessionContext
from agent_framework.exceptions import AgentException, AgentInvalidRequestException

from ..events import RequestInfoEvent, WorkflowEvent, WorkflowRunState
from .agent_updates import FORWARDED_EVENT_TYPES
from .messages import normalize_messages

if TYPE_CHECKING:
    from ..storage.protocol import CheckpointStorage

__all__ = ["AgentCall"]

logger = logging.getLogger("workflows")


class CallingAgent(Protocol):
    """What a call needs of its ``WorkflowAgent``."""

    context_providers: list[Any]

    @property
    def workflow(self) -> Any: ...

    def _to_response(self, response_id: str, events: list[WorkflowEvent[Any]]) -> AgentResponse: ...

    def _to_updates(
        self, response_id: str, event: WorkflowEvent[Any]
    ) -> list[AgentResponseUpdate]: ...

    def _answers(
        self, messages: Sequence[Message], pending: Mapping[str, RequestInfoEvent]
    ) -> dict[str, Any]: ...

    async def _run_after_providers(
        self, *, session: AgentSession | None, context: SessionContext
    ) -> None: ...


class AgentCall:
    """One call of a workflow agent: providers before, the workflow run, providers after."""

    def __init__(
        self,
        agent: CallingAgent,
        messages: Any,
        response_id: str,
        session: AgentSession | None,
        checkpoint_id: str | None,
        storage: CheckpointStorage | None,
        run_args: dict[str, Any],
    ) -> None:
        self.agent = agent
        self.input = normalize_messages(messages)
        self.response_id = response_id
        self.session = session
        self.checkpoint_id = checkpoint_id
        self.storage = storage
        self.run_args = run_args

    async def response(self) -> AgentResponse:
        session, context = await self._before()
        events = [e async for e in self._events(context, streaming=False)]
        result = self.agent._to_response(
            self.response_id, [e for e in events if e.type in FORWARDED_EVENT_TYPES]
        )
        await self._after(session, context, result)
        return result

    async def updates(self) -> AsyncIterator[AgentResponseUpdate]:
        session, context = await self._before()
        seen: list[AgentResponseUpdate] = []
        async for event in self._events(context, streaming=True):
            for update in self.agent._to_updates(self.response_id, event):
                seen.append(update)
                yield update
        await self._after(session, context, AgentResponse.from_updates(seen))

    async def _before(self) -> tuple[AgentSession | None, SessionContext]:
        agent = self.agent
        providers = agent.context_providers
        loads_history = any(p.load_messages for p in providers if isinstance(p, HistoryProvider))
        if self.session is not None and not loads_history:
            providers.append(InMemoryHistoryProvider())
        session = self.session
        if session is None and providers:
            session = AgentSession()
        context = SessionContext(
            session_id=session.session_id if session else None,
            service_session_id=session.service_session_id if session else None,
            input_messages=self.input,
            options={},
        )
        for provider in providers:
            if isinstance(provider, HistoryProvider) and not provider.load_messages:
                continue
            assert session is not None  # made above whenever there are providers
            await provider.before_run(
                agent=agent,
                session=session,
                context=context,
                state=session.state.setdefault(provider.source_id, {}),
            )
        return session, context

    async def _after(
        self, session: AgentSession | None, context: SessionContext, result: AgentResponse
    ) -> None:
        context._response = result  # what after_run providers (the history) persist
        await self.agent._run_after_providers(session=session, context=context)

    async def _events(
        self, context: SessionContext, *, streaming: bool
    ) -> AsyncIterator[WorkflowEvent[Any]]:
        workflow = self.agent.workflow
        messages = context.get_messages(include_input=True)
        if self.checkpoint_id is not None:
            if self.storage is None:
                raise AgentInvalidRequestException(
                    "checkpoint_storage must be provided when checkpoint_id is provided"
                )
            # The restore runs in the call's mode (as in MAF), so the executors it resumes see
            # the streaming they will be answered in; its events are not the answer.
            restore = {
                "checkpoint_id": self.checkpoint_id,
                "checkpoint_storage": self.storage,
                "tools": self.run_args["tools"],
            }
            if streaming:
                async for _ in workflow.run(stream=True, **restore):
                    pass
            else:
                await workflow.run(**restore)
            if not messages:
                logger.info("no input messages: the workflow was restored to the checkpoint")
                return
        status = workflow.status
        if status == WorkflowRunState.IDLE_WITH_PENDING_REQUESTS:
            arguments: dict[str, Any] = {
                "responses": self.agent._answers(messages, workflow.pending_requests)
            }
        elif status in (WorkflowRunState.IDLE, WorkflowRunState.CANCELLED):
            arguments = {"message": messages}
        else:
            raise AgentException(
                f"The underlying workflow is in an invalid state to restart: {status}."
            )
        if streaming:
            async for event in workflow.run(
                **arguments, stream=True, checkpoint_storage=self.storage, **self.run_args
            ):
                yield event
            return
        # Not streaming: agents inside answer whole (no token updates), as MAF's do.
        result = await workflow.run(**arguments, checkpoint_storage=self.storage, **self.run_args)
        for event in result:
            yield event
