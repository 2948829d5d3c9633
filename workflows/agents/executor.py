"""``AgentExecutor``: a Microsoft Agent Framework agent as a node of a workflow graph.

The executor keeps the conversation the agent has been given since it last answered (the
cache), the whole conversation after its last answer, its ``AgentSession`` and the tool calls
it is waiting on a person for. All of that is in its checkpoint state, under MAF's keys, so a
run resumed in another process carries the conversation on without asking the model again
for the turns that are done.

When the agent's answer asks for user input (a tool that requires approval, or a tool declared
without an implementation), each request becomes a workflow request (``request_info``) with
the request content as its data; the run pauses. Once every request of the batch is answered,
the answers go back to the agent as one turn, in the order the requests were made, and it
carries on. Computer-use calls follow MAF's extra rules (``computer_calls``).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from agent_framework import (
    Agent,
    AgentResponse,
    AgentResponseUpdate,
    AgentSession,
    Content,
    Message,
    SupportsAgentRun,
)
from agent_framework.exceptions import AgentInvalidResponseException

from ..agent_observer import current_observer
from ..context import WorkflowContext
from ..exceptions import CheckpointDecodeError
from ..executor import Executor, handler, response_handler
from ..registry import default_registry, is_restorable_class, register_type
from .checkpoint_state import AgentExecutorCheckpointState, check_state
from .computer_calls import (
    batch_order,
    check_computer_result,
    opens_computer_call,
    release_held,
    set_aside_replayed_results,
)
from .edited_calls import RejectionReasons, edit_recorded_call, edited_arguments, rejection_reasons
from .messages import normalize_messages

__all__ = [
    "AgentExecutor",
    "AgentExecutorCheckpointState",
    "AgentExecutorRequest",
    "AgentExecutorResponse",
    "resolve_agent_id",
]

logger = logging.getLogger("workflows")

ContextMode = Literal["full", "last_agent", "custom"]
AgentOutput = AgentResponse | AgentResponseUpdate
_Ctx = WorkflowContext["AgentExecutorResponse", AgentOutput]

# MAF's agent layer defers a computer tool's function results while a workflow runs the agent;
# it reads this session key (a name of its own, kept when it is missing from another version).
_DEFER_KEY = "workflow.defer_computer_function_results"


def _model_of(agent: SupportsAgentRun, response: AgentResponse) -> str:
    """The model that wrote a reply, as its chat response names it, else as the agent's client
    is configured ("" when neither says)."""
    raw = response.raw_representation
    for part in raw if isinstance(raw, list) else [raw]:
        named = getattr(part, "model_id", None)
        if isinstance(named, str) and named:
            return named
    configured = getattr(getattr(agent, "client", None), "model_id", None)
    return configured if isinstance(configured, str) else ""


def resolve_agent_id(agent: SupportsAgentRun) -> str:
    """The id an agent gets as an executor: its name, else its id (MAF's rule)."""
    return agent.name if agent.name else agent.id


# Registered here, not only when a workflow is built: a process that reads an agent run's
# checkpoints (a dashboard, a resume) must restore them before it builds anything.
@register_type
@dataclass
class AgentExecutorRequest:
    """Messages for an agent executor: kept in its conversation, answered when
    ``should_respond`` (otherwise only kept, for a later request)."""

    messages: list[Message]
    should_respond: bool = True


@register_type
@dataclass
class AgentExecutorResponse:
    """What an agent executor sends on when its agent answers.

    Attributes:
        executor_id: the executor that answered.
        agent_response: the agent's response, as the client gave it.
        full_conversation: every message the agent saw, then its answer: what the next agent
            in a chain needs so that no user prompt is lost.
    """

    executor_id: str
    agent_response: AgentResponse
    full_conversation: list[Message]

    def with_text(self, text: str) -> AgentExecutorResponse:
        """The same response with its answer replaced by one assistant message of ``text``,
        the conversation before it kept (for executors that transform an agent's answer and
        pass it on to another agent)."""
        message = Message("assistant", [text])
        answered = len(self.agent_response.messages)
        before = self.full_conversation[:-answered] if answered else list(self.full_conversation)
        return AgentExecutorResponse(
            executor_id=self.executor_id,
            agent_response=AgentResponse(messages=[message]),
            full_conversation=[*before, message],
        )


def _takes(agent: SupportsAgentRun, argument: str) -> bool:
    try:
        parameters = inspect.signature(agent.run).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == argument or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


class AgentExecutor(Executor):
    """Runs an agent on the messages it receives and sends its answer on.

    It takes an ``AgentExecutorRequest``, another agent's ``AgentExecutorResponse`` (chaining),
    a ``str``, a ``Message`` or a list of them. In a streaming run each update the agent writes
    is yielded as it arrives (``output`` or ``intermediate`` events, as ``output_from``
    designates the executor); otherwise the whole ``AgentResponse`` is yielded once. Downstream
    executors always receive the complete ``AgentExecutorResponse``.

    Args:
        agent: the agent (anything with MAF's ``SupportsAgentRun`` shape).
        session: the session to run it in; a new one from the agent by default.
        id: the executor id; the agent's name (else its id) by default.
        context_mode: what a received ``AgentExecutorResponse`` adds to the conversation: the
            whole conversation (``"full"``, the default), only the last agent's messages
            (``"last_agent"``), or what ``context_filter`` returns (``"custom"``).
        context_filter: for ``"custom"``: the full conversation in, the messages to use out.
        ensure_trailing_user_turn: when the conversation ends with an assistant message, add
            a "please continue." user turn to the call only (some providers answer nothing
            otherwise).

    Raises:
        ValueError: no id can be found, or the context mode and filter do not fit.
    """

    # The last agent of a chain sends its response into nothing, as in MAF: no warning.
    ends_chains_quietly = True

    def __init__(
        self,
        agent: SupportsAgentRun,
        *,
        session: AgentSession | None = None,
        id: str | None = None,
        context_mode: ContextMode | None = None,
        context_filter: Callable[[list[Message]], list[Message]] | None = None,
        ensure_trailing_user_turn: bool = False,
    ) -> None:
        executor_id = id or resolve_agent_id(agent)
        if not executor_id:
            raise ValueError(
                "Agent must have a non-empty name or id or an explicit id must be provided."
            )
        self._context_mode: ContextMode = context_mode or "full"
        if self._context_mode not in ("full", "last_agent", "custom"):
            raise ValueError("context_mode must be one of 'full', 'last_agent', or 'custom'.")
        if self._context_mode == "custom" and context_filter is None:
            raise ValueError(
                "context_filter must be provided when context_mode is set to 'custom'."
            )
        super().__init__(executor_id)
        self._agent = agent
        self._context_filter = context_filter
        self._ensure_trailing_user_turn = ensure_trailing_user_turn
        self._takes_tools = _takes(agent, "tools")
        self._session = session or agent.create_session()
        self._cache: list[Message] = []
        self._full_conversation: list[Message] = []
        self._pending_agent_requests: dict[str, Content] = {}
        self._pending_responses_to_agent: list[Content] = []
        self._pending_request_order: list[str] = []
        # call id -> the reason its rejection came with, for the agent's next turn only.
        self._rejection_reasons: dict[str, str] = {}
        self._takes_middleware = _takes(agent, "middleware")
        _register_response_format(agent)

    @property
    def agent(self) -> SupportsAgentRun:
        return self._agent

    @property
    def description(self) -> str | None:
        return self._agent.description

    def signature_type(self) -> str:
        # The agent's class is part of what the graph is; its instructions and model are not
        # (changing a prompt must not strand the runs in flight).
        cls = type(self._agent)
        return f"{super().signature_type()}[{cls.__module__}.{cls.__qualname__}]"

    # ------------------------------------------------------------------------------ handlers

    @handler
    async def run(self, request: AgentExecutorRequest, ctx: _Ctx) -> None:
        """Keep the request's messages; answer them when ``should_respond``."""
        self._cache.extend(request.messages)
        if request.should_respond:
            await self._answer(ctx)

    @handler
    async def from_response(self, prior: AgentExecutorResponse, ctx: _Ctx) -> None:
        """Carry on another agent's conversation (chaining), as ``context_mode`` says."""
        if self._context_mode == "full":
            self._cache.extend(prior.full_conversation)
        elif self._context_mode == "last_agent":
            self._cache.extend(prior.agent_response.messages)
        else:
            assert self._context_filter is not None  # checked in __init__
            self._cache.extend(self._context_filter(prior.full_conversation))
        await self._answer(ctx)

    @handler
    async def from_str(self, text: str, ctx: _Ctx) -> None:
        """A user prompt. From another executor into an empty conversation this usually means
        an agent's answer was turned into text and its conversation lost, which MAF warns of:
        ``AgentExecutorResponse.with_text`` keeps it."""
        if not self._cache and ctx.source_executor_ids != [f"internal:{self.id}"]:
            logger.warning(
                "AgentExecutor '%s': from_str handler invoked with an empty cache. If you are "
                "chaining from an AgentExecutor, the upstream custom executor may be emitting a "
                "plain str instead of using AgentExecutorResponse.with_text(...), which causes "
                "the full conversation context to be lost.",
                self.id,
            )
        self._cache.extend(normalize_messages(text))
        await self._answer(ctx)

    @handler
    async def from_message(self, message: Message, ctx: _Ctx) -> None:
        self._cache.extend(normalize_messages(message))
        await self._answer(ctx)

    @handler
    async def from_messages(self, messages: list[str | Message], ctx: _Ctx) -> None:
        self._cache.extend(normalize_messages(messages))
        await self._answer(ctx)

    def check_response(self, request: Any, response: Any) -> None:
        """A computer call is answered by its own result, before the run takes the answer."""
        if isinstance(request, Content) and request.type == "computer_tool_call":
            check_computer_result(request, response)

    @response_handler
    async def handle_user_input_response(
        self, original_request: Content, response: Content, ctx: _Ctx
    ) -> None:
        """An answer to one of the agent's user-input requests; once the whole batch is
        answered, the answers go to the agent together."""
        if original_request.type == "computer_tool_call":
            check_computer_result(original_request, response)
        request_id = original_request.id
        if request_id is None or request_id not in self._pending_agent_requests:
            raise AgentInvalidResponseException(
                "Response must match a pending user input request ID."
            )
        self._pending_agent_requests.pop(request_id)
        arguments = edited_arguments(original_request, response)
        if arguments is not None:
            edit_recorded_call(self._session, original_request, arguments)
        self._queue_answer(request_id, response)
        if not self._pending_agent_requests:
            await self._resume_with_answers(ctx)

    def reset(self) -> None:
        """Forget the messages given since the agent last answered."""
        self._cache.clear()

    # ----------------------------------------------------------------------------- answering

    async def _answer(self, ctx: _Ctx) -> None:
        """Run the agent on the conversation; send its answer on, or pause for user input."""
        messages = list(self._cache)
        if self._ensure_trailing_user_turn and messages and messages[-1].role == "assistant":
            messages.append(Message(role="user", contents=["please continue."]))
        if not messages:
            logger.warning(
                "AgentExecutor %s: Running agent with empty message cache. This could lead to "
                "service error for some LLM providers.",
                self.id,
            )
        self._session.state[_DEFER_KEY] = True
        try:
            if ctx.is_streaming():
                response = await self._run_streaming(ctx, messages)
            else:
                response = await self._run_once(ctx, messages)
        finally:
            self._session.state.pop(_DEFER_KEY, None)
        # The cache holds everything the agent was given; callers may resend whole histories,
        # so the conversation is rebuilt from it rather than extended.
        self._full_conversation = [*self._cache, *(response.messages if response else [])]
        if response is None:
            logger.info("AgentExecutor %s: Agent did not complete, awaiting user input", self.id)
            return
        await ctx.send_message(AgentExecutorResponse(self.id, response, self._full_conversation))
        self._cache.clear()

    def _run_arguments(self, ctx: _Ctx, stream: bool) -> dict[str, Any]:
        function_kwargs, client_kwargs = ctx.agent_run_kwargs()
        arguments: dict[str, Any] = {
            "stream": stream,
            "session": self._session,
            "function_invocation_kwargs": function_kwargs,
            "client_kwargs": client_kwargs,
        }
        tools = ctx.get_runtime_tools()
        if tools is not None and self._takes_tools:
            arguments["tools"] = tools
        if self._rejection_reasons and self._takes_middleware:
            arguments["middleware"] = [RejectionReasons(self._rejection_reasons)]
        return arguments

    async def _run_once(self, ctx: _Ctx, messages: list[Message]) -> AgentResponse | None:
        run = cast(Callable[..., Awaitable[AgentResponse]], self._agent.run)
        response = await run(messages, **self._run_arguments(ctx, stream=False))
        observer = current_observer()
        if observer is not None:
            observer.reply_done(self.id, response, _model_of(self._agent, response))
        requests = response.user_input_requests
        if requests:
            total = sum(len(message.contents) for message in response.messages)
            _warn_mixed(response.response_id, len(requests), total)
            await self._ask(requests, ctx, response)
            return None
        # An answer that waits for input is not an output: the request carries it.
        await ctx.yield_output(response)
        return response

    async def _run_streaming(self, ctx: _Ctx, messages: list[Message]) -> AgentResponse | None:
        stream = self._agent.run(messages, **self._run_arguments(ctx, stream=True))
        updates: list[AgentResponseUpdate] = []
        # From a computer call on, updates wait for the final response (see computer_calls).
        held: list[AgentResponseUpdate] | None = None
        observer = current_observer()
        async for update in cast(Any, stream):
            updates.append(update)
            if observer is not None:
                observer.reply_update(self.id, update)
            if held is None and opens_computer_call(update):
                held = []
            asked = update.user_input_requests
            if held is not None:
                held.append(update)
            elif asked:
                _warn_mixed(update.response_id, len(asked), len(update.contents))
            else:
                await ctx.yield_output(update)
        response = await self._final_response(stream, updates)
        if observer is not None:
            observer.reply_done(self.id, response, _model_of(self._agent, response))
        for update in release_held(held or [], response):
            await ctx.yield_output(update)
        # The final response decides: later output may have completed a streamed call.
        if response.user_input_requests:
            await self._ask(response.user_input_requests, ctx, response)
            return None
        return response

    async def _final_response(
        self, stream: Any, updates: list[AgentResponseUpdate]
    ) -> AgentResponse:
        # A ResponseStream runs the agent's result hooks (the session's history) when it is
        # finalized; an agent returning a plain async iterable gets its updates joined.
        finalize = getattr(stream, "get_final_response", None)
        if callable(finalize):
            return cast(AgentResponse, await finalize())
        if isinstance(self._agent, Agent):
            response_format = self._agent.default_options.get("response_format")
            return AgentResponse.from_updates(updates, output_format_type=response_format)
        return AgentResponse.from_updates(updates)

    # ---------------------------------------------------------------------------- user input

    async def _ask(self, requests: Sequence[Content], ctx: _Ctx, response: AgentResponse) -> None:
        """Raise one workflow request per user-input request; the batch is checked first, so
        a bad one registers none."""
        seen = set(self._pending_request_order)
        batch: list[tuple[str, Content]] = []
        for request in requests:
            request_id = request.id
            if not isinstance(request_id, str) or not request_id:
                raise AgentInvalidResponseException("User input requests must have non-empty IDs.")
            if request_id in seen:
                raise AgentInvalidResponseException(
                    f"Duplicate user input request ID: {request_id}"
                )
            seen.add(request_id)
            batch.append((request_id, request))
        order: list[str] = [request_id for request_id, _ in batch]
        if any(request.type == "computer_tool_call" for _, request in batch):
            order, done = batch_order(set(order), response)
            self._pending_responses_to_agent.extend(done)
        self._pending_request_order.extend(order)
        for request_id, request in batch:
            self._pending_agent_requests[request_id] = request
            await ctx.request_info(request, Content, request_id=request_id)

    def _queue_answer(self, request_id: str, response: Content) -> None:
        """Keep answers in the order the requests were made, whatever order they arrive in."""
        if not self._pending_request_order:
            self._pending_responses_to_agent.append(response)
            return
        if request_id not in self._pending_request_order:
            raise AgentInvalidResponseException(
                "Response request ID is absent from the pending request order."
            )
        position = self._pending_request_order.index(request_id)
        earlier_answered = sum(
            earlier not in self._pending_agent_requests
            for earlier in self._pending_request_order[:position]
        )
        self._pending_responses_to_agent.insert(earlier_answered, response)

    async def _resume_with_answers(self, ctx: _Ctx) -> None:
        if not self._pending_responses_to_agent:
            return
        turn: list[Message] = []
        for answer in self._pending_responses_to_agent:
            role = _answer_role(answer)
            if turn and turn[-1].role == role:
                turn[-1].contents.append(answer)
            else:
                turn.append(Message(role=role, contents=[answer]))
        self._rejection_reasons = rejection_reasons(self._pending_responses_to_agent)
        put_back = set_aside_replayed_results(
            self._agent,
            self._session,
            self._pending_responses_to_agent,
            self._pending_request_order,
        )
        self._cache = normalize_messages(turn)
        self._pending_responses_to_agent.clear()
        self._pending_request_order.clear()
        try:
            await self._answer(ctx)
        except BaseException:
            if put_back is not None:
                put_back()
            raise
        finally:
            self._rejection_reasons = {}

    # ---------------------------------------------------------------------------- checkpoints

    async def on_checkpoint_save(self) -> dict[str, Any]:
        state: AgentExecutorCheckpointState = {
            "cache": self._cache,
            "full_conversation": self._full_conversation,
            "agent_session": self._session.to_dict(),
            "pending_agent_requests": self._pending_agent_requests,
            "pending_responses_to_agent": self._pending_responses_to_agent,
            "pending_request_order": self._pending_request_order,
        }
        return dict(state)

    async def on_checkpoint_restore(self, state: dict[str, Any]) -> None:
        """Put the conversation back. Missing keys start empty; unknown keys are ignored.

        Raises:
            CheckpointDecodeError: a key holds something of the wrong kind (MAF raises its
                ``WorkflowCheckpointException``, which this is).
        """
        check_state(state)
        requests = state.get("pending_agent_requests") or {}
        answers = state.get("pending_responses_to_agent") or []
        order = state.get("pending_request_order")
        if order is None and answers and (requests or len(answers) > 1):
            raise CheckpointDecodeError(
                "AgentExecutor checkpoint is missing 'pending_request_order' for a partially "
                "resolved batch; restore a checkpoint from before the batch to preserve "
                "response order."
            )
        self._cache = list(state.get("cache") or [])
        self._full_conversation = list(state.get("full_conversation") or [])
        session = state.get("agent_session")
        if session:
            try:
                self._session = AgentSession.from_dict(session)
            except Exception as exc:
                raise CheckpointDecodeError(
                    f"AgentExecutor checkpoint field 'agent_session' could not be restored: {exc}"
                ) from exc
        else:
            self._session = self._agent.create_session()
        self._pending_agent_requests = dict(requests)
        self._pending_responses_to_agent = list(answers)
        self._pending_request_order = list(order) if order is not None else list(requests)


def _answer_role(answer: Content) -> str:
    if answer.type in ("function_result", "computer_tool_result"):
        return "tool"
    return "assistant" if answer.type == "error" else "user"


def _warn_mixed(response_id: str | None, requests: int, contents: int) -> None:
    if requests != contents:
        logger.warning(
            "Response %s contains %d user input requests but total message contents are %d; "
            "its other contents are not emitted",
            response_id,
            requests,
            contents,
        )


def _register_response_format(agent: SupportsAgentRun) -> None:
    """A structured output kept in a checkpoint must restore in another process."""
    options = getattr(agent, "default_options", None)
    response_format = options.get("response_format") if isinstance(options, Mapping) else None
    if isinstance(response_format, type) and is_restorable_class(response_format):
        default_registry.register(response_format)
