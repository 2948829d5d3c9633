"""Sub-workflows: a whole ``Workflow`` used as one executor of another (MAF's ``WorkflowExecutor``).

On each message the wrapper runs its child to completion (or until it waits for answers) inside
the parent's superstep, then hands the child's results to the parent: outputs become messages
(or parent outputs with ``allow_direct_output``), intermediate outputs are re-emitted under the
wrapper's id, and the child's requests either travel as ``SubWorkflowRequestMessage`` to a parent
executor that may answer them, or, with ``propagate_request``, become the wrapper's own requests,
answered through the parent's ``run(responses=...)``.

The child has no checkpoints of its own: the wrapper's ``on_checkpoint_save`` embeds the child's
whole run (``executor_states[<wrapper id>]["sub_workflow_checkpoint"]``, a
``WorkflowCheckpoint.to_dict()``), so a parent resumed in another process continues the child
exactly where it was.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .checkpoint import WorkflowCheckpoint, WorkflowMessage
from .context import WorkflowContext
from .events import RequestInfoEvent, WorkflowEvent, describe_type, request_from_fields
from .exceptions import CheckpointEncodeError
from .executor import Executor, handler, response_handler
from .registry import register_type
from .result import WorkflowRunResult
from .typecheck import is_instance_of

if TYPE_CHECKING:
    from .workflow import Workflow

__all__ = ["SubWorkflowRequestMessage", "SubWorkflowResponseMessage", "WorkflowExecutor"]

logger = logging.getLogger(__name__)

CHECKPOINT_KEY = "sub_workflow_checkpoint"


# The two messages below travel between executors, so they sit in checkpoints while in flight.
# They carry a RequestInfoEvent, whose type fields the codec cannot store; so each describes
# itself in storable fields through the model_dump/model_validate pair the codec accepts from
# any registered class (the names pydantic uses), and rebuilds the event from them.


def _event_fields(event: RequestInfoEvent) -> dict[str, Any]:
    return {
        "request_id": event.request_id,
        "source_executor_id": event.source_executor_id,
        "data": event.data,
        "response_type": describe_type(event.response_type),
        "created_at": event.created_at,
    }


def _event_from_fields(fields: Mapping[str, Any]) -> RequestInfoEvent:
    return request_from_fields(fields["data"], fields)


@dataclass
class SubWorkflowResponseMessage:
    """An answer to a sub-workflow's request, sent by a parent executor to the wrapper.

    Make it with ``SubWorkflowRequestMessage.create_response(data)``.

    Attributes:
        data: the answer.
        source_event: the child's ``request_info`` event being answered.
    """

    data: Any
    source_event: RequestInfoEvent

    def model_dump(self, **_: Any) -> dict[str, Any]:
        return {"data": self.data, "source_event": _event_fields(self.source_event)}

    @classmethod
    def model_validate(cls, fields: Mapping[str, Any]) -> SubWorkflowResponseMessage:
        return cls(data=fields["data"], source_event=_event_from_fields(fields["source_event"]))


@dataclass
class SubWorkflowRequestMessage:
    """A sub-workflow's request, sent by its wrapper along the wrapper's edges.

    A parent executor with a handler for this type may answer it itself:
    ``await ctx.send_message(request.create_response(answer), target_id=request.executor_id)``,
    or ask outside with its own ``ctx.request_info``.

    Attributes:
        source_event: the child's ``request_info`` event (``.data``, ``.request_id``,
            ``.response_type``...).
        executor_id: the id of the ``WorkflowExecutor`` whose child asked; send the answer there.
    """

    source_event: RequestInfoEvent
    executor_id: str

    def create_response(self, data: Any) -> SubWorkflowResponseMessage:
        """Wrap ``data`` as the answer to this request.

        Raises:
            TypeError: ``data`` is not of the request's declared response type.
        """
        expected = self.source_event.response_type
        # An unresolved (str) type is checked by the child when the answer reaches it.
        known = expected is not None and not isinstance(expected, str)
        if known and not is_instance_of(data, expected):
            raise TypeError(
                f"request {self.source_event.request_id!r} expects a "
                f"{describe_type(expected)} answer, not {type(data).__name__}"
            )
        return SubWorkflowResponseMessage(data=data, source_event=self.source_event)

    def model_dump(self, **_: Any) -> dict[str, Any]:
        return {"source_event": _event_fields(self.source_event), "executor_id": self.executor_id}

    @classmethod
    def model_validate(cls, fields: Mapping[str, Any]) -> SubWorkflowRequestMessage:
        return cls(
            source_event=_event_from_fields(fields["source_event"]),
            executor_id=fields["executor_id"],
        )


register_type(SubWorkflowRequestMessage)
register_type(SubWorkflowResponseMessage)


class WorkflowExecutor(Executor):
    """A workflow used as one executor of a parent workflow.

    Args:
        workflow: the child. Give each wrapper its own instance (with its own executor
            instances): the wrapper keeps the child's run in that instance between messages.
        id: the wrapper's id in the parent graph.
        allow_direct_output: yield the child's outputs as the parent's outputs instead of
            sending them along the wrapper's edges.
        propagate_request: re-issue the child's requests as the wrapper's own (answered with
            the parent's ``run(responses=...)``) instead of sending ``SubWorkflowRequestMessage``.

    Attributes:
        workflow: the child workflow (what a picture of the graph opens).
        allow_direct_output: as given.
        propagate_request: as given.
    """

    def __init__(
        self,
        workflow: Workflow,
        id: str,
        allow_direct_output: bool = False,
        propagate_request: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(id, **kwargs)
        self.workflow = workflow
        self.allow_direct_output = allow_direct_output
        self.propagate_request = propagate_request
        if workflow.checkpoint_storage is not None:
            logger.warning(
                "sub-workflow %r of WorkflowExecutor %r has its own checkpoint storage; it is not "
                "used: the child's state is saved in the parent's checkpoints",
                workflow.name,
                id,
            )

    # ---------------------------------------------------------------------------- introspection

    @property
    def input_types(self) -> list[Any]:
        """What the child's start executor takes, and answers from parent executors."""
        types = list(self.workflow.input_types)
        if SubWorkflowResponseMessage not in types:
            types.append(SubWorkflowResponseMessage)
        return types

    @property
    def output_types(self) -> list[Any]:
        """The child's workflow output types, plus ``SubWorkflowRequestMessage`` when some
        child executor can ask for input."""
        types = self._child_output_types()
        if any(ex.response_handler_specs for ex in self.workflow.executors.values()):
            types.append(SubWorkflowRequestMessage)
        return types

    @property
    def workflow_output_types(self) -> list[Any]:
        """The child's output types, whether it yields them itself (``allow_direct_output``)
        or sends them on: as in MAF, either may be designated an output or intermediate."""
        return self._child_output_types()

    def _child_output_types(self) -> list[Any]:
        types: list[Any] = []
        for ex in self.workflow.executors.values():
            types.extend(t for t in ex.workflow_output_types if t not in types)
        return types

    def find_handler(self, message: Any) -> Any:
        """A handler only for what ``can_handle`` takes: routing asks this first."""
        return super().find_handler(message) if self.can_handle(message) else None

    def can_handle(self, message: Any) -> bool:
        """Only what the child's start executor takes (the catch-all handler must not steal
        other executors' messages), answers from parent executors, and answers to this
        wrapper's propagated requests."""
        if isinstance(message, WorkflowMessage):
            if message.kind == "response" or message.request is not None:
                return True
            message = message.data
        if isinstance(message, SubWorkflowResponseMessage):
            return True
        return any(is_instance_of(message, t) for t in self.workflow.input_types)

    def signature_type(self) -> dict[str, Any]:
        """The wrapper's class and the child's whole graph signature, so a changed child is a
        changed parent graph."""
        cls = type(self)
        return {
            "type": f"{cls.__module__}.{cls.__qualname__}",
            "sub_workflow": self.workflow.graph_signature,
        }

    def to_dict(self) -> dict[str, Any]:
        """The executor as ``Executor.to_dict()`` has it, with the child under ``workflow``."""
        data = super().to_dict()
        data["workflow"] = self.workflow.to_dict()
        return data

    # --------------------------------------------------------------------------------- handlers

    @handler
    async def process_workflow(self, input_data: object, ctx: WorkflowContext[Any, Any]) -> None:
        """Run the child on a new input."""
        pending = self.workflow.pending_requests
        if pending:
            self._warn(
                ctx,
                f"WorkflowExecutor {self.id!r} got a new input while its sub-workflow "
                f"{self.workflow.name!r} still waits for {len(pending)} answer(s); the input joins "
                "that unfinished run (one child instance is shared), which is only safe when the "
                "child keeps no state between inputs",
            )
        result = await self.workflow._run_as_child(message=input_data, parent=ctx)
        await self._forward(result, ctx, set(pending))

    @handler
    async def handle_message_wrapped_request_response(
        self, response: SubWorkflowResponseMessage, ctx: WorkflowContext[Any, Any]
    ) -> None:
        """An answer from a parent executor to a request it intercepted."""
        await self._answer(response.source_event.request_id, response.data, ctx)

    @response_handler
    async def handle_propagated_request_response(
        self, original_request: Any, response: Any, ctx: WorkflowContext[Any, Any]
    ) -> None:
        """An answer, through the parent's ``run(responses=...)``, to a propagated request."""
        assert ctx.request_id is not None  # the engine sets it for every response handler
        await self._answer(ctx.request_id, response, ctx)

    async def _answer(self, request_id: str, value: Any, ctx: WorkflowContext[Any, Any]) -> None:
        if request_id not in self.workflow.pending_requests:
            self._warn(
                ctx,
                f"WorkflowExecutor {self.id!r} got an answer to request {request_id!r}, which its "
                "sub-workflow is not waiting for (unknown or already answered); it was ignored",
            )
            return
        before = set(self.workflow.pending_requests)
        result = await self.workflow._run_as_child(responses={request_id: value}, parent=ctx)
        await self._forward(result, ctx, before)

    async def _forward(
        self, result: WorkflowRunResult, ctx: WorkflowContext[Any, Any], known: set[str]
    ) -> None:
        """Hand the child's results to the parent: outputs, then intermediates, then the
        requests it has not seen yet (``known`` were forwarded by an earlier call)."""
        for event in result:
            if event.type == "output":
                if self.allow_direct_output:
                    await ctx.yield_output(event.data)
                else:
                    await ctx.send_message(event.data)
        for event in result:
            if event.type == "intermediate":
                ctx._scope.emit(WorkflowEvent("intermediate", data=event.data, executor_id=self.id))
            elif event.type == "warning":
                self._warn(ctx, f"sub-workflow {self.id!r}: {event.data}")
        for request in result.get_request_info_events():
            if request.request_id in known:
                continue
            if self.propagate_request:
                await ctx.request_info(
                    request.data, request.response_type, request_id=request.request_id
                )
            else:
                await ctx.send_message(SubWorkflowRequestMessage(request, self.id))

    def _warn(self, ctx: WorkflowContext[Any, Any], text: str) -> None:
        logger.warning(text)
        scope = ctx._scope
        scope.emit(
            WorkflowEvent("warning", data=text, executor_id=self.id, iteration=scope.iteration)
        )

    # ------------------------------------------------------------------------------ checkpoints

    async def on_checkpoint_save(self) -> dict[str, Any]:
        """The child's whole run as a nested checkpoint; nothing before the child first ran."""
        checkpoint = await self.workflow._export_run()
        if checkpoint is None:
            return {}
        try:
            return {CHECKPOINT_KEY: checkpoint.to_dict()}
        except CheckpointEncodeError as error:
            raise CheckpointEncodeError(f"sub-workflow {self.id!r}: {error}") from error

    async def on_checkpoint_restore(self, state: dict[str, Any]) -> None:
        """Put the child back as it was; a checkpoint from before it ran leaves it fresh."""
        data = state.get(CHECKPOINT_KEY)
        checkpoint = WorkflowCheckpoint.from_dict(data) if data is not None else None
        await self.workflow._import_run(checkpoint)
