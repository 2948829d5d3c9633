"""MAF compatibility: ``WorkflowBuilder`` options, build-time validation, a built workflow's
introspection and its pictures (``builder.py``, ``validation.py``, ``introspection.py``,
``viz.py``).

Written from Microsoft Agent Framework 1.23's documented and observed behaviour: what MAF builds
we build (logging what looks odd), what MAF refuses we refuse with the same error kind.

No ``from __future__ import annotations``: handler annotations below must be real objects.
"""

import json
import logging
import re
from pathlib import Path
from typing import Any, Never

import pytest

from workflows import (
    Case,
    Default,
    EdgeDuplicationError,
    Executor,
    ExecutorDuplicationError,
    FanInEdgeGroup,
    FanOutEdgeGroup,
    GraphConnectivityError,
    OutputDesignationError,
    SingleEdgeGroup,
    SwitchCaseEdgeGroup,
    TypeCompatibilityError,
    ValidationTypeEnum,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowValidationError,
    WorkflowViz,
    handler,
)

VALIDATION_LOG = "workflows.validation"


class Upper(Executor):
    @handler
    async def run(self, text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(text.upper())


class Shout(Executor):
    """Ends a chain: yields the workflow's output."""

    @handler
    async def run(self, text: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(text + "!")


class Planner(Executor):
    """Sends on and also yields (a progress note)."""

    @handler
    async def run(self, text: str, ctx: WorkflowContext[str, str]) -> None:
        await ctx.yield_output(f"planning {text}")
        await ctx.send_message(text)


class Quiet(Executor):
    """Declares no workflow output: cannot be designated."""

    @handler
    async def run(self, text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(text)


class Bytes(Executor):
    @handler
    async def run(self, data: bytes, ctx: WorkflowContext) -> None:
        pass


class Numbers(Executor):
    @handler
    async def run(self, n: int, ctx: WorkflowContext[Never, int]) -> None:
        await ctx.yield_output(n)


def planner_graph(**options: Any) -> tuple[Any, Planner, Shout]:
    planner, shout = Planner(id="planner"), Shout(id="shout")
    builder = WorkflowBuilder(start_executor=planner, **options).add_edge(planner, shout)
    return builder, planner, shout


def messages(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == level]


# --------------------------------------------------------------------------------- builder


def test_builder_takes_maf_positional_order_max_iterations_name_description() -> None:
    start = Shout(id="only")
    workflow = WorkflowBuilder(7, "named", "what it does", start_executor=start).build()
    assert (workflow.max_iterations, workflow.name, workflow.description) == (
        7,
        "named",
        "what it does",
    )


def test_without_designation_every_executor_is_an_output_executor() -> None:
    builder, planner, shout = planner_graph()
    workflow = builder.build()
    assert workflow.get_output_executors() == [planner, shout]
    assert workflow.get_intermediate_executors() == []
    assert workflow.is_terminal_executor("planner") and workflow.is_terminal_executor("shout")
    assert not workflow.is_intermediate_executor("planner")
    assert workflow.to_dict()["output_executors"] is None
    assert workflow.to_dict()["intermediate_executors"] is None


def test_output_from_designates_terminal_executors_and_hides_the_rest() -> None:
    planner, shout = Planner(id="planner"), Shout(id="shout")
    workflow = (
        WorkflowBuilder(start_executor=planner, output_from=[shout])
        .add_edge(planner, shout)
        .build()
    )
    assert [e.id for e in workflow.get_output_executors()] == ["shout"]
    assert workflow.is_terminal_executor("shout")
    assert not workflow.is_terminal_executor("planner")
    assert not workflow.is_intermediate_executor("planner")  # hidden, neither
    assert workflow._graph.classify_yield("planner") is None
    assert workflow._graph.classify_yield("shout") == "output"


def test_intermediate_output_from_all_other_takes_every_other_yielding_executor() -> None:
    planner, shout, quiet = Planner(id="planner"), Shout(id="shout"), Quiet(id="quiet")
    workflow = (
        WorkflowBuilder(
            start_executor=quiet, output_from=[shout], intermediate_output_from="all_other"
        )
        .add_chain([quiet, planner, shout])
        .build()
    )
    assert [e.id for e in workflow.get_output_executors()] == ["shout"]
    # quiet declares no workflow output, so "all_other" leaves it out
    assert [e.id for e in workflow.get_intermediate_executors()] == ["planner"]
    assert workflow.is_intermediate_executor("planner")
    assert workflow._graph.classify_yield("planner") == "intermediate"
    assert workflow.to_dict()["intermediate_executors"] == ["planner"]


async def test_a_run_reports_yields_as_the_designation_says() -> None:
    builder, _, _ = planner_graph(output_from=["shout"], intermediate_output_from="all_other")
    result = await builder.build().run("x")
    assert result.get_outputs() == ["x!"]
    assert result.get_intermediate_outputs() == ["planning x"]

    builder, _, _ = planner_graph(output_from=["shout"])
    result = await builder.build().run("x")
    assert result.get_outputs() == ["x!"]
    assert result.get_intermediate_outputs() == []  # the planner's yield is hidden


def test_output_from_all_selects_executors_that_declare_workflow_output() -> None:
    quiet, shout = Quiet(id="quiet"), Shout(id="shout")
    workflow = (
        WorkflowBuilder(start_executor=quiet, output_from="all").add_edge(quiet, shout).build()
    )
    assert [e.id for e in workflow.get_output_executors()] == ["shout"]


def test_intermediate_only_designation_makes_no_executor_terminal() -> None:
    builder, _, _ = planner_graph(intermediate_output_from="all")
    workflow = builder.build()
    assert workflow.get_output_executors() == []
    assert workflow.is_intermediate_executor("shout") and workflow.is_intermediate_executor(
        "planner"
    )
    assert not workflow.is_terminal_executor("shout")
    assert workflow.to_dict()["output_executors"] == []


def test_output_from_accepts_executor_ids_too() -> None:
    builder, _, _ = planner_graph(output_from=["shout"])
    assert [e.id for e in builder.build().get_output_executors()] == ["shout"]


def test_output_executors_is_a_deprecated_alias_that_logs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    shout = Shout(id="shout")
    with caplog.at_level(logging.WARNING):
        workflow = WorkflowBuilder(start_executor=shout, output_executors=[shout]).build()
    assert [e.id for e in workflow.get_output_executors()] == ["shout"]
    assert any("deprecated" in m for m in messages(caplog, logging.WARNING))
    with pytest.raises(TypeError):
        WorkflowBuilder(start_executor=shout, output_executors=[shout], output_from=[shout])


@pytest.mark.parametrize(
    ("options", "text"),
    [
        ({"output_from": ["planner"], "intermediate_output_from": ["planner"]}, "both"),
        ({"output_from": []}, "no executor"),
        ({"output_from": ["shout", "shout"]}, "twice"),
        ({"output_from": ["elsewhere"]}, "not part of the workflow"),
        ({"output_from": "every"}, "'every'"),
        ({"intermediate_output_from": "others"}, "'others'"),
    ],
)
def test_bad_designations_are_refused_as_output_validation(
    options: dict[str, Any], text: str
) -> None:
    with pytest.raises(OutputDesignationError, match=text) as refused:
        builder, _, _ = planner_graph(**options)
        builder.build()
    assert refused.value.validation_type is ValidationTypeEnum.OUTPUT_VALIDATION
    assert isinstance(refused.value, WorkflowValidationError)
    assert str(refused.value).startswith("[OUTPUT_VALIDATION] ")


def test_a_designated_executor_must_declare_workflow_output() -> None:
    quiet, shout = Quiet(id="quiet"), Shout(id="shout")
    builder = WorkflowBuilder(start_executor=quiet, output_from=[quiet]).add_edge(quiet, shout)
    with pytest.raises(OutputDesignationError, match="'quiet'") as refused:
        builder.build()
    assert refused.value.executor_ids == ["quiet"]


# ------------------------------------------------------------------------------ validation


def test_a_last_executor_that_declares_messages_it_sends_builds_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class StatefulWorker(Executor):  # seed 000's shape
        @handler
        async def run(self, text: str, ctx: WorkflowContext[dict, str]) -> None:
            await ctx.yield_output(text)

    class Scorer(Executor):
        @handler
        async def run(self, text: str, ctx: WorkflowContext[Any, float]) -> None:
            await ctx.yield_output(1.0)

    upper, worker, scorer = Upper(id="upper"), StatefulWorker(id="worker"), Scorer(id="scorer")
    with caplog.at_level(logging.INFO, logger=VALIDATION_LOG):
        WorkflowBuilder(start_executor=upper).add_fan_out_edges(upper, [worker, scorer]).build()
    warned = messages(caplog, logging.WARNING)
    assert any("'worker'" in m and "no outgoing edges" in m for m in warned)
    # WorkflowContext[Any, ...] promises nothing in particular: no warning for it.
    assert not any("'scorer'" in m for m in warned)
    ends = messages(caplog, logging.INFO)
    assert any("'scorer'" in m and "'worker'" in m for m in ends)  # the dead-end info line


async def test_a_union_output_needs_a_taker_for_one_member_only() -> None:
    class Either(Executor):
        @handler
        async def run(self, text: str, ctx: WorkflowContext[str | int]) -> None:
            await ctx.send_message(len(text))

    either, numbers = Either(id="either"), Numbers(id="numbers")
    workflow = WorkflowBuilder(start_executor=either).add_edge(either, numbers).build()
    assert (await workflow.run("four")).get_outputs() == [4]


def test_type_compatibility_is_checked_per_edge_and_names_both_ends() -> None:
    upper, shout, raw = Upper(id="upper"), Shout(id="shout"), Bytes(id="raw")
    builder = WorkflowBuilder(start_executor=upper).add_fan_out_edges(upper, [shout, raw])
    with pytest.raises(TypeCompatibilityError) as refused:
        builder.build()
    error = refused.value
    assert error.validation_type is ValidationTypeEnum.TYPE_COMPATIBILITY
    assert (error.source_executor_id, error.target_executor_id) == ("upper", "raw")
    assert error.source_types == [str] and error.target_types == [bytes]
    assert str(error).startswith("[TYPE_COMPATIBILITY] ")


def test_a_fan_in_target_must_take_a_list_of_what_the_sources_send() -> None:
    class Splitter(Executor):
        @handler
        async def run(self, text: str, ctx: WorkflowContext[str]) -> None:
            await ctx.send_message(text)

    class Joiner(Executor):
        @handler
        async def run(self, parts: list[str], ctx: WorkflowContext[Never, str]) -> None:
            await ctx.yield_output("".join(parts))

    start, a, b = Splitter(id="start"), Upper(id="a"), Upper(id="b")
    WorkflowBuilder(start_executor=start).add_fan_out_edges(start, [a, b]).add_fan_in_edges(
        [a, b], Joiner(id="join")
    ).build()
    wrong = WorkflowBuilder(start_executor=start).add_fan_out_edges(start, [a, b])
    with pytest.raises(TypeCompatibilityError, match="'a'"):
        wrong.add_fan_in_edges([a, b], Shout(id="join")).build()  # takes str, not list[str]


def test_edges_without_declared_types_are_not_checked_but_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Untyped(Executor):
        @handler
        async def run(self, text: str, ctx: WorkflowContext) -> None:
            pass

    untyped, raw = Untyped(id="untyped"), Bytes(id="raw")
    with caplog.at_level(logging.WARNING, logger=VALIDATION_LOG):
        WorkflowBuilder(start_executor=untyped).add_edge(untyped, raw).build()
    assert any("'untyped'" in m and "not checked" in m for m in messages(caplog, logging.WARNING))


def test_a_duplicate_edge_is_an_edge_duplication_error_with_its_id() -> None:
    a, b = Upper(id="a"), Shout(id="b")
    with pytest.raises(EdgeDuplicationError) as refused:
        WorkflowBuilder(start_executor=a).add_edge(a, b).add_edge(a, b).build()
    assert refused.value.edge_id == "a->b"
    assert refused.value.validation_type is ValidationTypeEnum.EDGE_DUPLICATION
    assert isinstance(refused.value, ValueError)


def test_a_fan_out_listing_a_target_twice_is_refused_at_build() -> None:
    a, b = Upper(id="a"), Shout(id="b")
    builder = WorkflowBuilder(start_executor=a).add_fan_out_edges(a, [b, b])
    with pytest.raises(EdgeDuplicationError, match="'a' -> 'b'"):
        builder.build()


def test_an_unreachable_executor_is_a_graph_connectivity_error() -> None:
    a, b, island = Upper(id="a"), Shout(id="b"), Upper(id="island")
    builder = WorkflowBuilder(start_executor=a).add_edge(a, b).add_edge(island, b)
    with pytest.raises(GraphConnectivityError, match="island") as refused:
        builder.build()
    assert refused.value.executor_ids == ["island"]
    assert refused.value.validation_type is ValidationTypeEnum.GRAPH_CONNECTIVITY


def test_two_executors_with_one_id_are_refused_when_added() -> None:
    a = Upper(id="twin")
    with pytest.raises(ExecutorDuplicationError) as refused:
        WorkflowBuilder(start_executor=a).add_edge(a, Shout(id="twin"))
    assert refused.value.executor_id == "twin"
    assert refused.value.validation_type is ValidationTypeEnum.EXECUTOR_DUPLICATION
    assert isinstance(refused.value, ValueError)  # what MAF raises


def test_a_self_loop_builds_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    class Counter(Executor):
        @handler
        async def run(self, n: int, ctx: WorkflowContext[int, int]) -> None:
            if n < 3:
                await ctx.send_message(n + 1)

    counter = Counter(id="counter")
    with caplog.at_level(logging.WARNING, logger=VALIDATION_LOG):
        WorkflowBuilder(start_executor=counter).add_edge(counter, counter).build()
    assert any("'counter'" in m and "itself" in m for m in messages(caplog, logging.WARNING))


async def test_switch_cases_may_share_a_target_and_a_default_may_come_early(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Route(Executor):
        @handler
        async def run(self, n: int, ctx: WorkflowContext[int]) -> None:
            await ctx.send_message(n)

    class Tag(Executor):
        @handler
        async def run(self, n: int, ctx: WorkflowContext[Never, str]) -> None:
            await ctx.yield_output(f"{self.id}:{n}")

    route, small, other = Route(id="route"), Tag(id="small"), Tag(id="other")
    shared = (
        WorkflowBuilder(start_executor=route)
        .add_switch_case_edge_group(
            route, [Case(lambda n: n < 0, small), Case(lambda n: n < 10, small), Default(other)]
        )
        .build()
    )
    assert (await shared.run(5)).get_outputs() == ["small:5"]

    route, small, other = Route(id="route"), Tag(id="small"), Tag(id="other")
    with caplog.at_level(logging.WARNING):
        early = (
            WorkflowBuilder(start_executor=route)
            .add_switch_case_edge_group(route, [Default(other), Case(lambda n: n < 10, small)])
            .build()
        )
    assert any("Default" in m for m in messages(caplog, logging.WARNING))
    assert (await early.run(5)).get_outputs() == ["other:5"]  # cases are tried in order


def test_a_switch_case_group_needs_exactly_one_default() -> None:
    route, a, b = Upper(id="route"), Shout(id="a"), Shout(id="b")
    with pytest.raises(WorkflowValidationError, match="exactly one Default"):
        WorkflowBuilder(start_executor=route).add_switch_case_edge_group(
            route, [Case(bool, a), Case(bool, b)]
        )


# --------------------------------------------------------------------------- introspection


def fan_graph() -> Any:
    class Start(Executor):
        @handler
        async def run(self, text: str, ctx: WorkflowContext[str]) -> None:
            await ctx.send_message(text)

    class Join(Executor):
        @handler
        async def run(self, parts: list[str], ctx: WorkflowContext[Never, str]) -> None:
            await ctx.yield_output("+".join(parts))

    start, a, b, join = Start(id="start"), Upper(id="a"), Upper(id="b"), Join(id="join")
    return (
        WorkflowBuilder(max_iterations=9, name="fan", start_executor=start)
        .add_fan_out_edges(start, [a, b])
        .add_fan_in_edges([a, b], join)
        .build()
    )


def test_a_workflow_describes_its_start_executors_and_types() -> None:
    workflow = fan_graph()
    assert workflow.start_executor_id == "start"
    assert workflow.get_start_executor() is workflow.executors["start"]
    assert [e.id for e in workflow.get_executors_list()] == ["start", "a", "b", "join"]
    assert workflow.input_types == [str]
    assert workflow.output_types == [str]
    assert workflow.max_iterations == 9


def test_edge_groups_have_maf_types_and_edges() -> None:
    workflow = fan_graph()
    groups = workflow.edge_groups
    assert [g.type for g in groups] == [
        *["InternalEdgeGroup"] * 4,
        "FanOutEdgeGroup",
        "FanInEdgeGroup",
    ]
    fan_out, fan_in = groups[-2], groups[-1]
    assert isinstance(fan_out, FanOutEdgeGroup) and isinstance(fan_in, FanInEdgeGroup)
    assert [(e.source_id, e.target_id) for e in fan_in.edges] == [("a", "join"), ("b", "join")]
    assert [e.id for e in fan_out.edges] == ["start->a", "start->b"]
    assert fan_in.source_executor_ids == ["a", "b"] and fan_in.target_executor_ids == ["join"]
    assert groups[0].edges[0].source_id == "internal:start"
    assert len({g.id for g in groups}) == len(groups)


def test_single_and_switch_case_groups_are_their_maf_classes() -> None:
    upper, a, b = Upper(id="upper"), Shout(id="a"), Shout(id="b")
    workflow = (
        WorkflowBuilder(start_executor=upper)
        .add_switch_case_edge_group(upper, [Case(bool, a), Default(b)])
        .build()
    )
    switch = workflow.edge_groups[-1]
    assert isinstance(switch, SwitchCaseEdgeGroup) and isinstance(switch, FanOutEdgeGroup)
    assert [e.has_condition for e in switch.edges] == [True, False]
    single = WorkflowBuilder(start_executor=upper).add_edge(upper, a).build().edge_groups[-1]
    assert isinstance(single, SingleEdgeGroup)


def test_to_dict_has_maf_keys_and_round_trips_through_json() -> None:
    workflow = fan_graph()
    data = workflow.to_dict()
    for key in (
        "name",
        "id",
        "start_executor_id",
        "max_iterations",
        "edge_groups",
        "executors",
        "output_executors",
        "intermediate_executors",
    ):
        assert key in data, key
    assert "description" not in data  # MAF leaves it out when there is none
    assert data["executors"]["a"]["id"] == "a" and data["executors"]["a"]["type"]
    fan_in = data["edge_groups"][-1]
    assert fan_in["type"] == "FanInEdgeGroup"
    assert fan_in["edges"] == [
        {"source_id": "a", "target_id": "join"},
        {"source_id": "b", "target_id": "join"},
    ]
    assert json.loads(workflow.to_json()) == data
    described = WorkflowBuilder(description="d", start_executor=Shout(id="s")).build()
    assert described.to_dict()["description"] == "d"


def test_a_workflow_id_names_the_instance_not_the_graph() -> None:
    first, second = fan_graph(), fan_graph()
    assert first.id == first.id
    assert first.id != second.id
    assert first.name == second.name == "fan"


# --------------------------------------------------------------------------------- pictures


def test_mermaid_shows_the_start_fan_in_and_conditions() -> None:
    upper, shout, raw = Upper(id="upper"), Shout(id="shout"), Shout(id="loud")

    def is_short(text: str) -> bool:
        return len(text) < 5

    workflow = (
        WorkflowBuilder(start_executor=upper)
        .add_edge(upper, shout, condition=is_short)
        .add_edge(upper, raw)
        .build()
    )
    text = WorkflowViz(workflow).to_mermaid()
    assert text.startswith("flowchart TD")
    assert '["upper (Start)"]' in text
    assert re.search(r"upper -\.->\|\"is_short\"\| shout", text)
    assert "upper --> loud" in text
    fan = WorkflowViz(fan_graph()).to_mermaid()
    assert "((fan-in))" in fan
    assert "internal" not in fan
    assert "internal" in WorkflowViz(fan_graph()).to_mermaid(include_internal_executors=True)


def test_awkward_executor_ids_cannot_break_the_pictures() -> None:
    start = Upper(id='say "hi"; end')
    other = Shout(id="a -> b [x]")
    workflow = WorkflowBuilder(start_executor=start).add_edge(start, other).build()
    mermaid = WorkflowViz(workflow).to_mermaid()
    for line in mermaid.splitlines()[1:]:
        node = re.match(r"\s*([A-Za-z][A-Za-z0-9_]*)", line)
        assert node is not None, line
        assert line.count('"') % 2 == 0, line
    assert "#quot;hi#quot;" in mermaid
    dot = WorkflowViz(workflow).to_digraph()
    assert dot.startswith("digraph Workflow {") and dot.rstrip().endswith("}")
    assert '"say \\"hi\\"; end" -> "a -> b [x]";' in dot


def test_export_writes_text_formats_and_explains_missing_graphviz(tmp_path: Path) -> None:
    viz = WorkflowViz(fan_graph())
    path = viz.export(format="dot", filename=str(tmp_path / "graph.dot"))
    assert Path(path).read_text(encoding="utf-8") == viz.to_digraph()
    mermaid = viz.export(format="mermaid", filename=str(tmp_path / "graph.mmd"))
    assert Path(mermaid).read_text(encoding="utf-8") == viz.to_mermaid()
    with pytest.raises(ValueError, match="gif"):
        viz.export(format="gif")
    try:
        import graphviz  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="graphviz"):
            viz.save_svg(str(tmp_path / "graph.svg"))


def test_a_sub_workflow_is_drawn_nested_inside_its_parent() -> None:
    from workflows import WorkflowExecutor

    inner_start, inner_end = Upper(id="u"), Shout(id="s")
    inner = WorkflowBuilder(start_executor=inner_start).add_edge(inner_start, inner_end).build()
    up, sub = Upper(id="up"), WorkflowExecutor(inner, id="sub")
    outer = WorkflowBuilder(start_executor=up).add_edge(up, sub).build()
    mermaid = WorkflowViz(outer).to_mermaid()
    assert 'subgraph sub_2["sub-workflow: sub"]' in mermaid
    assert "sub__u --> sub__s;" in mermaid
    dot = WorkflowViz(outer).to_digraph()
    assert 'label="sub-workflow: sub";' in dot and '"sub/u" -> "sub/s";' in dot
    assert outer.to_dict()["executors"]["sub"]["workflow"]["start_executor_id"] == "u"


# ------------------------------------------------------------------- MAF's other public names


async def test_maf_spelled_switch_cases_route_like_case_and_default() -> None:
    from workflows import SwitchCaseEdgeGroupCase, SwitchCaseEdgeGroupDefault

    up, shout, other = Upper(id="up"), Shout(id="shout"), Shout(id="other")
    # They name targets by id, so the builder must have met those executors already.
    workflow = (
        WorkflowBuilder(start_executor=up)
        .add_edge(shout, other)
        .add_switch_case_edge_group(
            up,
            [
                SwitchCaseEdgeGroupCase(lambda text: text.startswith("A"), "shout"),
                SwitchCaseEdgeGroupDefault("other"),
            ],
        )
        .build()
    )
    assert SwitchCaseEdgeGroupDefault("other").target_id == "other"
    result = await workflow.run("abc")
    assert [(e.executor_id, e.data) for e in result if e.type == "output"] == [("shout", "ABC!")]
    result = await workflow.run("xyz")
    assert [(e.executor_id, e.data) for e in result if e.type == "output"] == [("other", "XYZ!")]


def test_validate_workflow_graph_refuses_what_build_refuses() -> None:
    from workflows import validate_workflow_graph

    up, shout, stray = Upper(id="up"), Shout(id="shout"), Shout(id="stray")
    groups = [SingleEdgeGroup("up", "shout")]
    validate_workflow_graph(groups, {"up": up, "shout": shout}, up)
    with pytest.raises(GraphConnectivityError):
        validate_workflow_graph(groups, {"up": up, "shout": shout, "stray": stray}, up)


def test_maf_exception_names_are_the_same_families() -> None:
    import workflows
    from workflows import exceptions

    assert exceptions.WorkflowException is workflows.WorkflowError
    assert issubclass(workflows.ConcurrentRunError, workflows.WorkflowRunnerException)
    assert workflows.WorkflowConvergenceException is workflows.WorkflowConvergenceError
    assert issubclass(workflows.GraphMismatchError, workflows.WorkflowCheckpointException)
    assert workflows.INTERNAL_SOURCE_ID("start") == "internal:start"
