"""The functional API's names and shapes: MAF users' ``from agent_framework import workflow, step``
becomes ``from workflows import workflow, step``, and the graph engine's own module keeps its
place under ``workflows.workflow`` for the code that imports it from there.
"""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys

import agent_framework
import pytest

import workflows
from workflows import (
    FunctionalWorkflow,
    FunctionalWorkflowDefinition,
    InMemoryCheckpointStorage,
    RunContext,
    StepWrapper,
    WorkflowValidationError,
    get_run_context,
    step,
    workflow,
)

pytestmark = pytest.mark.filterwarnings(
    "ignore::agent_framework._feature_stage.ExperimentalWarning"
)

PUBLIC = (
    "workflow",
    "step",
    "FunctionalWorkflow",
    "FunctionalWorkflowDefinition",
    "FunctionalWorkflowAgent",
    "RunContext",
    "StepWrapper",
    "get_run_context",
)


def test_the_package_gives_the_decorators_under_maf_s_names() -> None:
    from workflows import step as imported_step
    from workflows import workflow as imported_workflow

    assert imported_workflow is workflows.workflow is workflows.functional.workflow
    assert imported_step is workflows.step
    assert callable(imported_workflow) and not inspect.ismodule(imported_workflow)
    assert set(PUBLIC) <= set(workflows.__all__)


def test_the_graph_workflow_module_stays_importable_by_its_path() -> None:
    from workflows.workflow import Workflow

    module = importlib.import_module("workflows.workflow")
    assert module.Workflow is Workflow is workflows.Workflow
    assert sys.modules["workflows.workflow"] is module


def test_the_public_signatures_match_maf_1_23() -> None:
    pairs = [
        (workflow, agent_framework.workflow),
        (step, agent_framework.step),
        (FunctionalWorkflowDefinition.build, agent_framework.FunctionalWorkflowDefinition.build),
        (RunContext.request_info, agent_framework.RunContext.request_info),
        (RunContext.__init__, agent_framework.RunContext.__init__),
        (StepWrapper.__init__, agent_framework.StepWrapper.__init__),
        (FunctionalWorkflow.as_agent, agent_framework.FunctionalWorkflow.as_agent),
    ]
    for ours, maf in pairs:
        assert _parameters(ours) == _parameters(maf), ours
    maf_run = _parameters(agent_framework.FunctionalWorkflow.run)
    our_run = _parameters(FunctionalWorkflow.run)
    assert [p for p in our_run if p != "run_id"] == maf_run  # run_id: this engine's lineage


def _parameters(func: object) -> list[str]:
    target = inspect.unwrap(func)  # type: ignore[arg-type]
    return list(inspect.signature(target).parameters)


def test_the_definition_has_no_run_and_builds_independent_workflows() -> None:
    @workflow(name="echo", description="says it back")
    async def echo(text: str) -> str:
        return text

    assert isinstance(echo, FunctionalWorkflowDefinition) and not hasattr(echo, "run")
    storage = InMemoryCheckpointStorage()
    first, second = echo.build(checkpoint_storage=storage), echo.build()
    assert isinstance(first, FunctionalWorkflow) and first is not second
    assert first.checkpoint_storage is storage and second.checkpoint_storage is None
    assert (first.name, first.description) == ("echo", "says it back")
    assert first.graph_signature["kind"] == "functional"
    assert first.input_types == [str]


def test_a_workflow_function_with_two_inputs_is_refused_when_decorated() -> None:
    with pytest.raises(WorkflowValidationError, match="multiple non-RunContext parameters"):

        @workflow
        async def two(a: str, b: str) -> str:
            return a + b


async def test_a_step_is_the_plain_function_outside_a_run() -> None:
    @step
    async def double(x: int) -> int:
        return 2 * x

    assert await double(4) == 8
    assert get_run_context() is None
    assert double.__name__ == "double" and double.__wrapped__ is not None


def test_the_agent_layer_loads_only_with_the_agent() -> None:
    code = (
        "import sys, workflows; from workflows import workflow, step; "
        "assert 'agent_framework' not in sys.modules; "
        "workflows.FunctionalWorkflowAgent; assert 'agent_framework' in sys.modules"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
