"""One superstep, as plain steps over data: route the queued messages, run the handlers, commit.

``route`` decides who receives what; ``run_deliveries`` executes handlers (concurrently across
executors, one at a time per executor); ``commit`` applies a successful superstep to the run.
Nothing here touches storage; the loop in ``workflow.py`` sequences that.
"""

from __future__ import annotations

import asyncio
import logging
import traceback
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .checkpoint import WorkflowMessage, now_timestamp
from .context import _DELETED, WorkflowContext
from .edges import EdgeGroup
from .events import ErrorDetails, RequestInfoEvent, WorkflowEvent, WorkflowRunState
from .graph import Graph

if TYPE_CHECKING:
    from .tracing import RunTrace, SuperstepTrace

__all__ = ["Delivery", "HandlerFailure", "RunRuntime", "SuperstepScope", "commit", "route"]

EventSink = Callable[[WorkflowEvent], None]

logger = logging.getLogger("workflows")


@dataclass
class RunRuntime:
    """The resumable state of one lineage (what a checkpoint captures)."""

    run_id: str
    iteration: int = 0
    messages: list[WorkflowMessage] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    buffers: dict[str, dict[str, list[Any]]] = field(default_factory=dict)
    pending: dict[str, RequestInfoEvent] = field(default_factory=dict)
    answered: list[str] = field(default_factory=list)
    last_checkpoint_id: str | None = None
    # The lineage's trace context, kept in its checkpoints (tracing.py); None when untraced.
    trace_carrier: dict[str, str] | None = None
    # This invocation's run span, None when tracing is off.
    trace: RunTrace | None = None
    # The agent arguments of the lineage (workflows.run_kwargs), and this invocation's tools.
    run_kwargs: dict[str, Any] = field(default_factory=dict)
    tools: list[Any] | None = None


@dataclass(slots=True)
class Delivery:
    data: Any
    source_ids: list[str]
    request: RequestInfoEvent | None = None
    # Where MAF's runner delivers it from, which decides the order handlers start in when a
    # superstep has several deliveries: the edge group it came through (None: from outside the
    # graph, or a fan-in's release), the message's position in the superstep, and whether the
    # message named its target (a fan-out or switch-case group broadcasts the others).
    group: EdgeGroup | None = None
    position: int = 0
    targeted: bool = False


@dataclass
class RoutePlan:
    deliveries: dict[str, list[Delivery]]
    buffers: dict[str, dict[str, list[Any]]]
    warnings: list[str]


class HandlerFailure(Exception):
    """A handler raised; carries the executor id and the original exception."""

    def __init__(self, executor_id: str, error: BaseException) -> None:
        super().__init__(f"executor {executor_id!r} failed: {error!r}")
        self.executor_id = executor_id
        self.error = error


def error_details(error: BaseException, executor_id: str | None) -> ErrorDetails:
    return ErrorDetails(
        error_type=type(error).__name__,
        message=str(error),
        traceback="".join(traceback.format_exception(error)),
        executor_id=executor_id,
    )


# ----------------------------------------------------------------------------------------- route


async def route(
    graph: Graph, messages: list[WorkflowMessage], buffers: dict[str, dict[str, list[Any]]]
) -> RoutePlan:
    """Decide every delivery of this superstep. Pure apart from awaiting edge conditions.

    A message that no edge and no handler accepts becomes a warning, never a silent drop.
    """
    deliveries: dict[str, list[Delivery]] = {}
    warnings: list[str] = []
    # Fan-in buffers are copied (two levels; the data itself is never mutated) so a superstep
    # that fails leaves the run's buffers exactly as they were.
    work = (
        {key: {src: list(items) for src, items in slot.items()} for key, slot in buffers.items()}
        if graph.fan_in_groups
        else buffers
    )
    executors = graph.executors
    for position, message in enumerate(messages):
        if message.kind == "response" or message.source_id.startswith("internal:"):
            target = message.target_id or ""
            deliveries.setdefault(target, []).append(
                Delivery(message.data, [message.source_id], message.request, None, position)
            )
            continue
        groups = graph.outgoing.get(message.source_id)
        if not groups:
            if executors[message.source_id].ends_chains_quietly:
                continue
            warnings.append(
                f"{type(message.data).__name__} message from {message.source_id!r} was dropped: "
                "the executor has no outgoing edges"
            )
            continue
        delivered = False
        refused: list[str] = []
        for group in groups:
            targets = await group.select(message.data)
            if message.target_id is not None:
                targets = [t for t in targets if t == message.target_id]
            for target in targets:
                if group.kind == "fan_in":
                    slot = work.setdefault(group.key, {})
                    slot.setdefault(message.source_id, []).append(message.data)
                    delivered = True
                elif executors[target].find_handler(message.data) is not None:
                    deliveries.setdefault(target, []).append(
                        Delivery(
                            message.data,
                            [message.source_id],
                            None,
                            group,
                            position,
                            message.target_id is not None,
                        )
                    )
                    delivered = True
                else:
                    refused.append(target)
        if not delivered:
            warnings.append(_drop_reason(message, refused))
    if graph.fan_in_groups:
        _release_fan_in(graph, work, deliveries, warnings, len(messages))
    return RoutePlan(deliveries, work, warnings)


def _drop_reason(message: WorkflowMessage, refused: list[str]) -> str:
    kind = type(message.data).__name__
    where = f"{kind} message from {message.source_id!r}"
    if message.target_id is not None and not refused:
        return f"{where} to {message.target_id!r} was dropped: no edge leads there"
    if refused:
        return f"{where} was dropped: {refused} have no handler for {kind}"
    return f"{where} was dropped: no edge condition accepted it"


def _release_fan_in(
    graph: Graph,
    buffers: dict[str, dict[str, list[Any]]],
    deliveries: dict[str, list[Delivery]],
    warnings: list[str],
    position: int,
) -> None:
    for group in graph.fan_in_groups:
        slot = buffers.get(group.key)
        if not slot or not all(slot.get(source) for source in group.sources):
            continue
        combined = [item for source in group.sources for item in slot[source]]
        del buffers[group.key]
        target = group.targets[0]
        if graph.executors[target].can_handle(combined):
            deliveries.setdefault(target, []).append(
                Delivery(combined, list(group.sources), None, group, position)
            )
        else:
            warnings.append(
                f"fan-in list for {target!r} was dropped: it has no handler for a list of "
                f"{sorted({type(x).__name__ for x in combined})}"
            )


# ----------------------------------------------------------------------------------------- scope


class SuperstepScope:
    """What one superstep's handlers share: staged state, outboxes, new requests, the event sink."""

    def __init__(
        self,
        graph: Graph,
        runtime: RunRuntime,
        iteration: int,
        sink: EventSink,
        streaming: bool,
    ) -> None:
        self.graph = graph
        self.committed_state = runtime.state
        self.iteration = iteration
        self.streaming = streaming
        self.emit = sink
        self.runtime = runtime
        self._staged: dict[str, dict[str, Any]] = {}
        self._outbox: dict[str, list[WorkflowMessage]] = {}
        self.new_requests: dict[str, RequestInfoEvent] = {}
        self.announced_pending = bool(runtime.pending)
        self.trace: SuperstepTrace | None = None

    def classify_yield(self, executor_id: str) -> str | None:
        return self.graph.classify_yield(executor_id)

    # The agent arguments, read only by agents (context.Superstep).
    @property
    def tools(self) -> list[Any] | None:
        return self.runtime.tools

    @property
    def run_kwargs(self) -> dict[str, Any]:
        return self.runtime.run_kwargs

    @property
    def executor_ids(self) -> set[str]:
        return self.graph.executor_ids

    @property
    def agent_names(self) -> dict[str, str]:
        return self.graph.agent_names

    def accepts_request(self, executor_id: str, data: Any, response_type: Any) -> bool:
        return bool(self.graph.executors[executor_id].accepts_request(data, response_type))

    def staged_state(self, executor_id: str) -> dict[str, Any]:
        staged = self._staged.get(executor_id)
        if staged is None:
            staged = self._staged[executor_id] = {}
        return staged

    def send(self, executor_id: str, data: Any, target_id: str | None) -> None:
        box = self._outbox.get(executor_id)
        if box is None:
            box = self._outbox[executor_id] = []
        box.append(WorkflowMessage(data, executor_id, target_id))

    def request_info(
        self, executor_id: str, request_id: str, data: Any, response_type: Any
    ) -> None:
        if request_id in self.runtime.pending or request_id in self.new_requests:
            raise ValueError(f"request id {request_id!r} is already pending")
        if request_id in self.runtime.answered:
            raise ValueError(
                f"request id {request_id!r} was used by a request that has been answered; "
                "request ids are single-use"
            )
        event = RequestInfoEvent(
            "request_info",
            data=data,
            executor_id=executor_id,
            iteration=self.iteration,
            request_id=request_id,
            source_executor_id=executor_id,
            request_type=type(data),
            response_type=response_type,
            created_at=now_timestamp(),
        )
        self.new_requests[request_id] = event
        self.emit(event)
        if not self.announced_pending:
            self.announced_pending = True
            self.emit(WorkflowEvent("status", state=WorkflowRunState.IN_PROGRESS_PENDING_REQUESTS))

    def outbox_in(self, order: list[str]) -> list[WorkflowMessage]:
        out: list[WorkflowMessage] = []
        for executor_id in order:
            out.extend(self._outbox.get(executor_id, ()))
        return out

    def staged_in(self, order: list[str]) -> list[tuple[str, dict[str, Any]]]:
        return [(eid, self._staged[eid]) for eid in order if self._staged.get(eid)]


# ---------------------------------------------------------------------------------------- execute


async def run_deliveries(scope: SuperstepScope, deliveries: dict[str, list[Delivery]]) -> None:
    """Run every delivery, one at a time per executor, in MAF's runner's order.

    MAF delivers each source's messages concurrently with the other sources', through each of
    its edge groups concurrently; a group takes the source's messages one after another and
    hands a broadcast to all its targets at once. The same nesting of tasks here makes
    handlers start (and their events appear) in the order they do on MAF, for instance a
    fan-out's messages message by message rather than executor by executor.
    """
    if len(deliveries) == 1:
        ((executor_id, items),) = deliveries.items()
        if len(items) == 1:
            await _run_executor(scope, executor_id, items)
            return
    locks = {executor_id: asyncio.Lock() for executor_id in deliveries}

    async def deliver(executor_id: str, delivery: Delivery) -> None:
        async with locks[executor_id]:
            await _run_executor(scope, executor_id, [delivery])

    async def run_lane(steps: list[list[tuple[str, Delivery]]]) -> None:
        for step in steps:
            if _broadcast(step[0][1]):
                await _concurrently([deliver(*pair) for pair in step])
            else:
                for pair in step:
                    await deliver(*pair)

    async def run_source(lanes: list[list[list[tuple[str, Delivery]]]]) -> None:
        if len(lanes) == 1:
            await run_lane(lanes[0])
        else:
            await _concurrently([run_lane(steps) for steps in lanes])

    sources = _delivery_tree(scope.graph, deliveries)
    if len(sources) == 1:
        await run_source(sources[0])
    else:
        await _concurrently([run_source(lanes) for lanes in sources])


def _broadcast(delivery: Delivery) -> bool:
    """A fan-out or switch-case group hands a message that named no target to all at once."""
    group = delivery.group
    return group is not None and group.kind in _BROADCASTING and not delivery.targeted


_BROADCASTING = frozenset({"fan_out", "switch_case"})


def _lane(graph: Graph, delivery: Delivery) -> tuple[str, int]:
    """(source, index of its edge group; -1 from outside the graph) a delivery came along."""
    group = delivery.group
    if group is None:
        return delivery.source_ids[0], -1
    if group.kind == "fan_in":
        return f"fan-in:{group.key}", 0
    source = delivery.source_ids[0]
    return source, graph.outgoing[source].index(group)


def _delivery_tree(
    graph: Graph, deliveries: dict[str, list[Delivery]]
) -> list[list[list[list[tuple[str, Delivery]]]]]:
    """The deliveries as sources (in the order they sent) of lanes (edge groups, in graph
    order) of steps (one message each, in order) of (executor id, delivery) pairs."""
    pairs = sorted(
        ((executor_id, d) for executor_id, items in deliveries.items() for d in items),
        key=lambda pair: pair[1].position,
    )
    sources: dict[str, dict[int, dict[int, list[tuple[str, Delivery]]]]] = {}
    for executor_id, delivery in pairs:
        source, index = _lane(graph, delivery)
        steps = sources.setdefault(source, {}).setdefault(index, {})
        steps.setdefault(delivery.position, []).append((executor_id, delivery))
    return [[list(lanes[index].values()) for index in sorted(lanes)] for lanes in sources.values()]


async def _concurrently(work: list[Coroutine[Any, Any, None]]) -> None:
    tasks = [asyncio.ensure_future(item) for item in work]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        # One failure (or our own cancellation) ends the superstep: stop the siblings too.
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def _run_executor(scope: SuperstepScope, executor_id: str, items: list[Delivery]) -> None:
    executor = scope.graph.executors[executor_id]
    iteration = scope.iteration
    emit = scope.emit
    for delivery in items:
        emit(
            WorkflowEvent(
                "executor_invoked", data=delivery.data, executor_id=executor_id, iteration=iteration
            )
        )
        ctx: WorkflowContext[Any, Any] | None = None
        try:
            if scope.trace is not None:
                with scope.trace.executor(executor_id, type(executor).__name__):
                    ctx = await _invoke(scope, executor, delivery)
            elif delivery.request is not None:
                ctx = await _call_response_handler(scope, executor, delivery)
            else:
                # Untraced, the common case: the handler is called right here, one coroutine
                # frame fewer per invocation than through _invoke.
                found = executor.find_handler(delivery.data)
                if found is None:  # routing checked this; only a raced mutation gets here
                    kind = type(delivery.data).__name__
                    raise TypeError(f"executor {executor_id!r} has no handler for {kind}")
                spec, fn = found
                ctx = WorkflowContext(scope, executor_id, delivery.source_ids, spec.output_types)
                await fn(delivery.data, ctx)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            details = error_details(error, executor_id)
            emit(
                WorkflowEvent(
                    "executor_failed",
                    data=details,
                    executor_id=executor_id,
                    iteration=iteration,
                    details=details,
                )
            )
            raise HandlerFailure(executor_id, error) from error
        emit(
            WorkflowEvent(
                "executor_completed",
                data=ctx.produced() if ctx is not None and ctx.has_produced else None,
                executor_id=executor_id,
                iteration=iteration,
            )
        )


async def _invoke(
    scope: SuperstepScope, executor: Any, delivery: Delivery
) -> WorkflowContext[Any, Any] | None:
    """One delivery to its handler; the context it ran with (None: an answer was dropped)."""
    if delivery.request is not None:
        return await _call_response_handler(scope, executor, delivery)
    found = executor.find_handler(delivery.data)
    if found is None:  # routing checked this; only a raced mutation gets here
        raise TypeError(
            f"executor {executor.id!r} has no handler for {type(delivery.data).__name__}"
        )
    spec, fn = found
    ctx: WorkflowContext[Any, Any] = WorkflowContext(
        scope, executor.id, delivery.source_ids, spec.output_types
    )
    await fn(delivery.data, ctx)
    return ctx


async def _call_response_handler(
    scope: SuperstepScope, executor: Any, delivery: Delivery
) -> WorkflowContext[Any, Any] | None:
    request = delivery.request
    assert request is not None
    found = executor.find_response_handler(request.data, delivery.data)
    if found is None:
        # MAF drops such an answer silently; it is dropped here too, but visibly.
        text = (
            f"the answer to request {request.request_id!r} was dropped: executor "
            f"{executor.id!r} has no @response_handler for a {type(request.data).__name__} "
            f"request answered with {type(delivery.data).__name__}"
        )
        logger.warning("%s", text)
        scope.emit(
            WorkflowEvent("warning", data=text, executor_id=executor.id, iteration=scope.iteration)
        )
        return None
    spec, fn = found
    ctx: WorkflowContext[Any, Any] = WorkflowContext(
        scope, executor.id, delivery.source_ids, spec.output_types, request_id=request.request_id
    )
    await fn(request.data, delivery.data, ctx)
    return ctx


# ------------------------------------------------------------------------------------------ commit


def commit(
    runtime: RunRuntime, scope: SuperstepScope, plan: RoutePlan, order: list[str]
) -> list[str]:
    """Apply a successful superstep to the run; returns warnings about conflicting state writes.

    Staged writes are applied in executor order, so when two executors write the same key in one
    superstep the outcome is deterministic (the later executor in graph order wins) and reported.
    """
    warnings: list[str] = []
    writers: dict[str, str] = {}
    for executor_id, staged in scope.staged_in(order):
        for key, value in staged.items():
            if key in writers:
                warnings.append(
                    f"shared state key {key!r} was written by both {writers[key]!r} and "
                    f"{executor_id!r} in superstep {scope.iteration}; "
                    f"{executor_id!r}'s value was kept"
                )
            writers[key] = executor_id
            if value is _DELETED:
                runtime.state.pop(key, None)
            else:
                runtime.state[key] = value
    runtime.messages = scope.outbox_in(order)
    runtime.buffers = plan.buffers
    runtime.pending.update(scope.new_requests)
    runtime.iteration = scope.iteration
    return warnings
