"""``ConcurrentBuilder``: every participant answers the same input at once, then one aggregator
combines their answers.

The graph is ``dispatcher -> (fan-out) participants -> (fan-in) aggregator``. The dispatcher
turns the run's input into one ``AgentExecutorRequest`` that every participant receives; each
agent participant runs in an ``AgentExecutor`` (an ``AgentApprovalExecutor`` when reviewed) and
sends its ``AgentExecutorResponse``; custom executors take the request and send such a response
themselves. The fan-in waits for all of them and hands the aggregator the list, in participant
order. The default aggregator yields one ``AgentResponse`` holding each participant's last
assistant message; ``with_aggregator`` replaces it with an executor or a callback.

Only the aggregator's yields are outputs by default; ``output_from`` /
``intermediate_output_from`` show participants' own yields too (an agent's streamed updates).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable, Sequence
from typing import Any, Literal, Never, cast

from agent_framework import AgentResponse, Message, SupportsAgentRun

from ..agents.executor import (
    AgentExecutor,
    AgentExecutorRequest,
    AgentExecutorResponse,
    resolve_agent_id,
)
from ..agents.messages import normalize_messages
from ..builder import WorkflowBuilder
from ..context import WorkflowContext
from ..executor import Executor, handler
from ..storage.protocol import CheckpointStorage
from ..workflow import Workflow
from .helpers import agent_ids_of, check_participants
from .participant_output import (
    UNSET,
    ParticipantIntermediateOutputSelection,
    ParticipantOutputSpecifier,
    coalesce_output_from,
    coerce_intermediate_output_from,
    resolve_participant_output_config,
)
from .request_info import (
    AgentApprovalExecutor,
    resolve_request_info_filter,
    validate_request_info_filter,
)

__all__ = [
    "AGGREGATOR_ID",
    "AggregatorCallback",
    "ConcurrentBuilder",
    "DEFAULT_WORKFLOW_NAME",
    "DISPATCHER_ID",
]

logger = logging.getLogger(__name__)

DEFAULT_WORKFLOW_NAME = "Concurrent"
DISPATCHER_ID = "dispatcher"
AGGREGATOR_ID = "aggregator"
# A callback without a usable name gets MAF's id for it (it shows in events).
_UNNAMED_CALLBACK_ID = "_CallbackAggregator_unnamed"

AggregatorCallback = (
    Callable[[list[AgentExecutorResponse]], Any]
    | Callable[[list[AgentExecutorResponse], WorkflowContext[Never, Any]], Any]
)


class _DispatchToAllParticipants(Executor):
    """Sends the run's input, as one ``AgentExecutorRequest``, to every participant."""

    @handler
    async def from_request(
        self, request: AgentExecutorRequest, ctx: WorkflowContext[AgentExecutorRequest]
    ) -> None:
        await ctx.send_message(request)

    @handler
    async def from_str(self, prompt: str, ctx: WorkflowContext[AgentExecutorRequest]) -> None:
        await ctx.send_message(_request(prompt))

    @handler
    async def from_message(
        self, message: Message, ctx: WorkflowContext[AgentExecutorRequest]
    ) -> None:
        await ctx.send_message(_request(message))

    @handler
    async def from_messages(
        self, messages: list[str | Message], ctx: WorkflowContext[AgentExecutorRequest]
    ) -> None:
        await ctx.send_message(_request(messages))


def _request(messages: Any) -> AgentExecutorRequest:
    return AgentExecutorRequest(messages=normalize_messages(messages), should_respond=True)


def _final_assistant(result: AgentExecutorResponse) -> Message | None:
    """A participant's last assistant message: from its response, else (an executor that
    filled only the conversation) from its conversation."""
    for messages in (result.agent_response.messages, result.full_conversation):
        for message in reversed(messages):
            if str(message.role).lower() == "assistant":
                return message
    return None


class _AggregateAgentConversations(Executor):
    """Yields one ``AgentResponse`` of each participant's last assistant message, in
    participant order (the prompt is the input, not part of the answer)."""

    @handler
    async def aggregate(
        self,
        results: list[AgentExecutorResponse],
        ctx: WorkflowContext[Never, AgentResponse],
    ) -> None:
        if not results:
            logger.error("Concurrent aggregator received empty results list")
            raise ValueError("Aggregation failed: no results provided")
        replies: list[Message] = []
        for result in results:
            final = _final_assistant(result)
            if final is None:
                logger.warning(
                    "No assistant reply found for executor %s; skipping", result.executor_id
                )
                continue
            replies.append(final)
        if not replies:
            logger.error(
                "Aggregation failed: no assistant replies found across %d results", len(results)
            )
            raise RuntimeError("Aggregation failed: no assistant replies found")
        await ctx.yield_output(AgentResponse(messages=replies))


class _CallbackAggregator(Executor):
    """A function as the aggregator: ``f(results)`` or ``f(results, ctx)``, sync or async.

    An async function (or one returning an awaitable) is awaited; a sync one runs in a worker
    thread so it cannot stall the other executors. A value it returns, other than None, is
    yielded as the output (it may also yield through ``ctx`` itself).
    """

    def __init__(self, callback: Callable[..., Any], id: str | None = None) -> None:
        name = getattr(callback, "__name__", "") or ""
        super().__init__(id or (name if name and name != "<lambda>" else _UNNAMED_CALLBACK_ID))
        self._callback = callback
        self._takes_ctx = len(inspect.signature(callback).parameters) >= 2

    @handler
    async def aggregate(
        self, results: list[AgentExecutorResponse], ctx: WorkflowContext[Never, Any]
    ) -> None:
        arguments: tuple[Any, ...] = (results, ctx) if self._takes_ctx else (results,)
        if inspect.iscoroutinefunction(self._callback):
            value = await self._callback(*arguments)
        else:
            value = await asyncio.to_thread(self._callback, *arguments)
        # Callable objects with an async __call__ and wrappers returning coroutines land here.
        if inspect.isawaitable(value):
            value = await value
        if value is not None:
            await ctx.yield_output(value)


class ConcurrentBuilder:
    """Builds a fan-out / fan-in workflow: all participants at once, then an aggregator.

    Args:
        name: the workflow's name; ``"Concurrent"`` by default.
        participants: agents (``SupportsAgentRun``) and executors; a custom executor takes an
            ``AgentExecutorRequest`` and sends an ``AgentExecutorResponse``.
        checkpoint_storage: where the workflow saves its checkpoints.
        output_from: participants (agents, executors or ids) whose yields are ``output``
            events besides the aggregator's, or ``"all"``.
        intermediate_output_from: participants whose yields are ``intermediate`` events,
            ``"all"``, or ``"all_other"``. Participants selected by neither are not shown.

    Raises:
        ValueError: no participants, a participant twice, or a bad output literal.
        TypeError: a participant that is neither an agent nor an executor.
    """

    def __init__(
        self,
        *,
        name: str | None = None,
        participants: Sequence[SupportsAgentRun | Executor],
        checkpoint_storage: CheckpointStorage | None = None,
        output_from: Sequence[ParticipantOutputSpecifier] | Literal["all"] | None = cast(
            Any, UNSET
        ),
        intermediate_output_from: ParticipantIntermediateOutputSelection = None,
    ) -> None:
        self._name = name or DEFAULT_WORKFLOW_NAME
        self._checkpoint_storage = checkpoint_storage
        self._aggregator: Executor | None = None
        self._request_info_enabled = False
        self._request_info_filter: set[str] = set()
        self._output_from = coalesce_output_from(output_from=output_from)
        self._intermediate_output_from = coerce_intermediate_output_from(intermediate_output_from)
        self._participants = check_participants(participants, strict=True)

    def with_aggregator(self, aggregator: Executor | AggregatorCallback) -> ConcurrentBuilder:
        """Replace the default aggregator.

        Args:
            aggregator: an executor with a handler for ``list[AgentExecutorResponse]`` that
                yields the output, or a function ``f(results)`` / ``f(results, ctx)`` (sync or
                async) whose returned value, unless None, is the output.

        Returns:
            This builder.

        Raises:
            ValueError: an aggregator was already set.
            TypeError: ``aggregator`` is neither an executor nor callable.
        """
        if self._aggregator is not None:
            raise ValueError("with_aggregator() has already been called on this builder instance.")
        if isinstance(aggregator, Executor):
            self._aggregator = aggregator
        elif callable(aggregator):
            self._aggregator = _CallbackAggregator(aggregator)
        else:
            raise TypeError("aggregator must be an Executor or a callable")
        return self

    def with_request_info(
        self, *, agents: Sequence[str | SupportsAgentRun] | None = None
    ) -> ConcurrentBuilder:
        """Pause for a person after each reviewed agent answers, before aggregation.

        Each reviewed agent's answer raises a ``request_info`` whose data is its
        ``AgentExecutorResponse``; answer with an ``AgentRequestInfoResponse``: ``approve()``
        sends it to the aggregator, messages make the agent answer again. The aggregator runs
        once every participant's answer is in.

        Args:
            agents: the agents to review, by name or instance; all of them by default.

        Returns:
            This builder.

        Raises:
            TypeError: an entry is neither a name nor an agent.
        """
        self._request_info_enabled = True
        self._request_info_filter = resolve_request_info_filter(list(agents) if agents else None)
        return self

    def _reviewed(self, agent: SupportsAgentRun) -> bool:
        if not self._request_info_enabled:
            return False
        return not self._request_info_filter or resolve_agent_id(agent) in self._request_info_filter

    def _resolve_participants(self) -> list[Executor]:
        """Each participant as its executor.

        Raises:
            ValueError: ``with_request_info(agents=...)`` names a non-agent.
        """
        executors: list[Executor] = []
        for participant in self._participants:
            if isinstance(participant, Executor):
                executors.append(participant)
            elif self._reviewed(participant):
                executors.append(AgentApprovalExecutor(participant))
            else:
                executors.append(AgentExecutor(participant))
        if self._request_info_enabled:
            validate_request_info_filter(
                self._request_info_filter, agent_ids_of(self._participants)
            )
        return executors

    def build(self) -> Workflow:
        """Wire the dispatcher, the participants and the aggregator, and build the workflow.

        Returns:
            The workflow; its ``output`` is the aggregator's yield (plus designated
            participants' yields).

        Raises:
            ValueError: a bad output designation or review filter, or a graph the workflow
                builder refuses (``WorkflowValidationError``: fewer than two participants, an
                aggregator that does not take ``list[AgentExecutorResponse]``...).
        """
        dispatcher = _DispatchToAllParticipants(id=DISPATCHER_ID)
        aggregator = self._aggregator or _AggregateAgentConversations(id=AGGREGATOR_ID)
        participants = self._resolve_participants()
        outputs, intermediates = resolve_participant_output_config(
            participants=participants,
            output_from=self._output_from,
            intermediate_output_from=self._intermediate_output_from,
            extra_output_executors=[aggregator],
        )
        builder = WorkflowBuilder(
            name=self._name,
            start_executor=dispatcher,
            checkpoint_storage=self._checkpoint_storage,
            output_from=outputs,
            intermediate_output_from=intermediates,
        )
        builder.add_fan_out_edges(dispatcher, participants)
        builder.add_fan_in_edges(participants, aggregator)
        return builder.build()
