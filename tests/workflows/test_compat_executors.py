"""Executors and decorators behave as Microsoft Agent Framework's do (``executor.py``,
``handlers.py``): explicit handler types, type names given as text, plain ``def`` function
executors, ``can_handle`` of a ``WorkflowMessage``, and the executor's introspection.

No ``from __future__ import annotations``: executors below are defined inside tests, so their
annotations must be real objects. Types named as text are module-level, as MAF requires.
"""

import threading
from dataclasses import dataclass
from typing import Any, Never, TypeVar

import pytest

from workflows import (
    Executor,
    FunctionExecutor,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowValidationError,
    executor,
    handler,
    response_handler,
)
from workflows.checkpoint import WorkflowMessage
from workflows.events import RequestInfoEvent


@dataclass
class Order:
    item: str


@dataclass
class Receipt:
    item: str


@dataclass
class Question:
    text: str


T = TypeVar("T")


class Collect(Executor):
    """Yields whatever it receives."""

    @handler
    async def take(self, message: object, ctx: WorkflowContext[Never, Any]) -> None:
        await ctx.yield_output(message)


async def outputs_of(start: Executor, then: Executor, message: Any) -> list[Any]:
    workflow = WorkflowBuilder(start_executor=start).add_edge(start, then).build()
    return (await workflow.run(message)).get_outputs()


# ------------------------------------------------------------------- @handler: explicit types


async def test_handler_explicit_types_replace_missing_annotations() -> None:
    class Shout(Executor):
        @handler(input=str, output=str)
        async def shout(self, message, ctx):
            await ctx.send_message(message.upper())

    shout = Shout(id="shout")
    assert (shout.input_types, shout.output_types) == ([str], [str])
    assert await outputs_of(shout, Collect(id="out"), message="hi") == ["HI"]


def test_handler_explicit_types_without_input_are_refused() -> None:
    with pytest.raises(WorkflowValidationError, match="input="):

        class Half(Executor):
            @handler(output=int)
            async def half(self, message: int, ctx: WorkflowContext[int]) -> None:
                pass


def test_handler_explicit_types_switch_every_annotation_off() -> None:
    class Typed(Executor):
        @handler(input=int)
        async def take(self, message: str, ctx: WorkflowContext[str, bytes]) -> None:
            pass

    typed = Typed(id="typed")
    assert typed.input_types == [int]
    assert typed.output_types == []
    assert typed.workflow_output_types == []


def test_handler_output_none_is_the_same_as_omitting_it() -> None:
    class Quiet(Executor):
        @handler(input=int, output=None, workflow_output=None)
        async def take(self, message, ctx):
            pass

    assert Quiet(id="quiet").output_types == []


async def test_handler_type_names_resolve_against_the_module() -> None:
    class Till(Executor):
        @handler(input="Order | int", output="Receipt")
        async def ring(self, message, ctx):
            await ctx.send_message(Receipt(message.item))

    till = Till(id="till")
    assert till.input_types == [Order | int]
    assert till.output_types == [Receipt]
    assert await outputs_of(till, Collect(id="out"), message=Order("tea")) == [Receipt("tea")]


def test_handler_type_names_defined_later_in_the_module_resolve_when_the_executor_is_built() -> (
    None
):
    class Late(Executor):
        @handler(input="list[DefinedAfterTheTests]", workflow_output="DefinedAfterTheTests")
        async def take(self, message, ctx):
            pass

    late = Late(id="late")
    assert late.input_types == [list[DefinedAfterTheTests]]
    assert late.workflow_output_types == [DefinedAfterTheTests]


def test_handler_type_names_may_name_a_class_nested_in_the_executor() -> None:
    class Inbox(Executor):
        @dataclass
        class Letter:
            text: str

        @handler(input="Letter")
        async def take(self, message, ctx):
            pass

    assert Inbox(id="inbox").input_types == [Inbox.Letter]


def test_an_unknown_type_name_is_refused_naming_it() -> None:
    class Lost(Executor):
        @handler(input="NoSuchType")
        async def take(self, message, ctx):
            pass

    with pytest.raises(WorkflowValidationError, match="NoSuchType"):
        Lost(id="lost")


def test_a_type_name_is_parsed_never_evaluated() -> None:
    with pytest.raises(WorkflowValidationError, match="not a type expression"):

        class Sneaky(Executor):
            @handler(input="__import__('os').getcwd()")
            async def take(self, message, ctx):
                pass


def test_a_type_variable_inside_an_explicit_type_is_refused() -> None:
    with pytest.raises(WorkflowValidationError, match="type variable"):

        class Generic(Executor):
            @handler(input=list[T])
            async def take(self, message, ctx):
                pass


def test_a_handler_must_take_self_message_and_ctx() -> None:
    with pytest.raises(WorkflowValidationError, match=r"\(self, message, ctx\)"):

        class NoContext(Executor):
            @handler
            async def take(self, message: int) -> None:
                pass


def test_a_synchronous_handler_method_is_refused_when_the_class_is_defined() -> None:
    with pytest.raises(WorkflowValidationError, match="async def"):

        class Blocking(Executor):
            @handler
            def take(self, message: int, ctx: WorkflowContext) -> None:
                pass


async def test_the_most_specific_explicit_type_wins_whatever_the_method_names() -> None:
    class Sorter(Executor):
        @handler(input=object, workflow_output=str)
        async def aaa_anything(self, message, ctx):
            await ctx.yield_output("anything")

        @handler(input="int", workflow_output=str)
        async def zzz_number(self, message, ctx):
            await ctx.yield_output("number")

    assert (await WorkflowBuilder(start_executor=Sorter(id="s")).build().run(7)).get_outputs() == [
        "number"
    ]


# -------------------------------------------------------------------- @executor: explicit types


async def test_executor_output_overrides_only_the_sent_type() -> None:
    @executor(output=float)
    async def halve(message: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(message / 2)

    assert (halve.input_types, halve.output_types) == ([int], [float])
    assert await outputs_of(halve, Collect(id="out"), message=3) == [1.5]


def test_executor_workflow_output_overrides_only_the_yielded_type() -> None:
    @executor(workflow_output=str)
    async def report(message: int, ctx: WorkflowContext[int, int]) -> None:
        pass

    assert report.input_types == [int]
    assert report.output_types == [int]
    assert report.workflow_output_types == [str]


def test_function_executor_takes_the_same_keywords() -> None:
    async def price(message: Order, ctx: WorkflowContext) -> None:
        pass

    priced = FunctionExecutor(price, "price", output=Receipt, workflow_output="int | str")
    assert priced.id == "price"
    assert priced.input_types == [Order]
    assert priced.output_types == [Receipt]
    assert priced.workflow_output_types == [int, str]


async def test_executor_input_may_be_a_type_name() -> None:
    @executor(input="Order", workflow_output=str)
    async def label(message, ctx):
        await ctx.yield_output(message.item)

    assert label.input_types == [Order]
    assert (
        await WorkflowBuilder(start_executor=label).build().run(Order("pen"))
    ).get_outputs() == ["pen"]


def test_a_function_executor_reports_its_type_as_function_executor() -> None:
    @executor(id="upper")
    async def upper(text: str, ctx: WorkflowContext[str]) -> None:
        pass

    assert upper.to_dict() == {"id": "upper", "type": "FunctionExecutor"}


def test_executor_refuses_static_and_class_methods() -> None:
    async def plain(message: int) -> None:
        pass

    with pytest.raises(WorkflowValidationError, match="static/class method"):
        FunctionExecutor(staticmethod(plain))


# ---------------------------------------------------------------- plain synchronous functions


async def test_a_plain_function_executor_runs_off_the_event_loop() -> None:
    loop_thread = threading.get_ident()
    threads: list[int] = []

    @executor
    def record(message: int) -> None:
        threads.append(threading.get_ident())

    await WorkflowBuilder(start_executor=record).build().run(1)
    assert threads and threads[0] != loop_thread


async def test_a_plain_function_uses_the_context_without_await() -> None:
    @executor(id="double")
    def double(message: int, ctx: WorkflowContext[int, str]) -> None:
        ctx.set_state("seen", message)
        ctx.send_message(message * 2)
        ctx.yield_output(f"sent {message * 2}")

    result = await outputs_of(double, Collect(id="out"), message=21)
    assert result == ["sent 42", 42]


# -------------------------------------------------------------------------------- can_handle


class Reviewer(Executor):
    @handler
    async def start(self, message: int, ctx: WorkflowContext) -> None:
        await ctx.request_info(Question(f"{message}?"), bool)

    @response_handler
    async def answered(
        self, original_request: Question, response: bool, ctx: WorkflowContext[Never, str]
    ) -> None:
        await ctx.yield_output(f"{original_request.text} {response}")


def request_for(data: Any) -> RequestInfoEvent:
    return RequestInfoEvent(
        "request_info", data=data, request_id="r1", source_executor_id="reviewer"
    )


def test_can_handle_takes_a_standard_workflow_message() -> None:
    reviewer = Reviewer(id="reviewer")
    assert reviewer.can_handle(WorkflowMessage(data=1, source_id="internal:reviewer"))
    assert not reviewer.can_handle(WorkflowMessage(data="one", source_id="internal:reviewer"))
    assert reviewer.can_handle(1) and not reviewer.can_handle("one")


def test_can_handle_matches_a_response_by_its_request_and_answer_together() -> None:
    reviewer = Reviewer(id="reviewer")

    def response(answer: Any, request: Any) -> WorkflowMessage:
        return WorkflowMessage(answer, "internal:reviewer", kind="response", request=request)

    assert reviewer.can_handle(response(True, request_for(Question("ok"))))
    assert not reviewer.can_handle(response("yes", request_for(Question("ok"))))
    assert not reviewer.can_handle(response(True, request_for(Order("tea"))))
    assert not reviewer.can_handle(response(True, None))


# ----------------------------------------------------------------------------- introspection


def test_output_types_is_an_empty_list_when_nothing_is_declared() -> None:
    class Silent(Executor):
        @handler
        async def take(self, message: int, ctx: WorkflowContext) -> None:
            pass

    silent = Silent(id="silent")
    assert silent.output_types == []
    assert silent.workflow_output_types == []
    assert silent.declared_output_types is None


def test_declared_output_types_lists_what_every_handler_declares() -> None:
    class Both(Executor):
        @handler
        async def number(self, message: int, ctx: WorkflowContext[int]) -> None:
            pass

        @handler
        async def text(self, message: str, ctx: WorkflowContext[str | bytes]) -> None:
            pass

    assert Both(id="both").declared_output_types == [int, str, bytes]


def test_an_executor_serialises_to_its_id_and_type() -> None:
    class Named(Executor):
        @handler
        async def take(self, message: int, ctx: WorkflowContext) -> None:
            pass

    assert Named(id="n").to_dict() == {"id": "n", "type": "Named"}
    renamed = Named.from_json(Named(id="n", type_="Stage").to_json())
    assert (renamed.id, renamed.type, renamed.type_) == ("n", "Stage", "Stage")
    assert renamed.clone().to_dict() == {"id": "n", "type": "Stage"}


def test_request_response_introspection() -> None:
    reviewer = Reviewer(id="reviewer")
    assert reviewer.is_request_response_capable
    assert reviewer.is_request_supported(Question, bool)
    assert not reviewer.is_request_supported(Question, str)
    assert not reviewer.is_request_supported(Order, bool)
    assert not Collect(id="c").is_request_response_capable
    assert reviewer.workflow_output_types == [str]


async def test_defer_discovery_lets_a_subclass_register_its_own_handlers_first() -> None:
    class Dynamic(Executor):
        def __init__(self) -> None:
            super().__init__(id="dynamic", defer_discovery=True)
            self._register_instance_handler(
                name="triple",
                func=self.triple,
                message_type=int,
                ctx_annotation=WorkflowContext[Never, int],
                output_types=[],
                workflow_output_types=[int],
            )
            self._discover_handlers()
            self._discover_response_handlers()

        async def triple(self, message: int, ctx: WorkflowContext[Never, int]) -> None:
            await ctx.yield_output(message * 3)

        @handler
        async def text(self, message: str, ctx: WorkflowContext[Never, int]) -> None:
            await ctx.yield_output(len(message))

    dynamic = Dynamic()
    assert dynamic.input_types == [int, str]
    assert (await WorkflowBuilder(start_executor=dynamic).build().run(2)).get_outputs() == [6]


# ----------------------------------------------------------- @response_handler: explicit types


async def test_response_handler_explicit_types_replace_annotations() -> None:
    class Asker(Executor):
        @handler(input=int)
        async def ask(self, message, ctx):
            await ctx.request_info(Question(f"{message}?"), bool)

        @response_handler(request="Question", response=bool, workflow_output=str)
        async def answered(self, original_request, response, ctx):
            await ctx.yield_output(f"{original_request.text} {response}")

    asker = Asker(id="asker")
    assert asker.is_request_supported(Question, bool)
    assert asker.workflow_output_types == [str]
    workflow = WorkflowBuilder(start_executor=asker).build()
    (request,) = (await workflow.run(3)).get_request_info_events()
    assert (await workflow.run(responses={request.request_id: True})).get_outputs() == ["3? True"]


@pytest.mark.parametrize(
    ("keywords", "missing"),
    [({"request": Question}, "response="), ({"response": bool}, "request="), ({"output": str}, "")],
)
def test_response_handler_explicit_types_need_request_and_response(
    keywords: dict[str, Any], missing: str
) -> None:
    with pytest.raises(WorkflowValidationError, match=f"must give {missing}"):

        class Partial(Executor):
            @response_handler(**keywords)
            async def answered(
                self, original_request: Question, response: bool, ctx: WorkflowContext
            ) -> None:
                pass


@dataclass
class DefinedAfterTheTests:
    """Named as text by a handler above, before this line ran."""

    value: int
