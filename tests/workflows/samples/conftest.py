"""Running a ported Microsoft Agent Framework sample on MAF 1.23 and on ``workflows``.

A port lives at ``tests/workflows/samples/<MAF's folder>/<sample>.py``: the sample's workflow,
executors, calls and prints as MAF's repository has them, with its workflow imports from
``workflows`` (and ``workflows.orchestrations``) and its hosted chat client replaced by one of
``workflows.agents.local_chat``. It defines ``async def main()``. It may define ``INPUTS`` (the
lines ``input()`` returns, in order) and ``compare(maf, ours)`` when a difference between the
engines is deliberate (it then asserts what must still agree).

``run_sample(path, engine)`` executes the port with the imports as written (``"ours"``) or
with them pointed back at ``agent_framework`` (``"maf"``), in this process, and returns what it
printed and the events every workflow run of it emitted, graph and functional (``@workflow``)
runs alike, in order; a run started inside another run (a sub-workflow) is seen through its
parent's events only.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import contextvars
import dataclasses
import importlib
import io
import re
import sys
import types
import warnings
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent

_IMPORTS_TO_MAF = (
    (
        re.compile(r"^(\s*)from workflows\.orchestrations import", re.MULTILINE),
        r"\1from agent_framework.orchestrations import",
    ),
    (
        re.compile(r"^(\s*)from workflows\.exceptions import", re.MULTILINE),
        r"\1from agent_framework.exceptions import",
    ),
    (re.compile(r"^(\s*)from workflows import", re.MULTILINE), r"\1from agent_framework import"),
)

# Ids, addresses and times that differ between any two runs, whatever the engine.
_VOLATILE = (
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<uuid>"),
    (re.compile(r"\b(af-call-|call_|WorkflowAgent_)?[0-9a-f]{8,64}\b"), r"\1<hex>"),
    (re.compile(r"0x[0-9a-f]+"), "0x<addr>"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?"), "<time>"),
    (re.compile(r"\b\d+\.\d+ ?(s|ms|seconds)\b"), "<duration>"),
)


@dataclasses.dataclass
class SampleRun:
    stdout: str
    events: list[str]
    error: str | None

    @property
    def normalized(self) -> str:
        text = self.stdout
        for pattern, replacement in _VOLATILE:
            text = pattern.sub(replacement, text)
        return text


def load_port(path: Path, engine: str) -> types.ModuleType:
    source = path.read_text()
    if engine == "maf":
        for pattern, replacement in _IMPORTS_TO_MAF:
            source = pattern.sub(replacement, source)
    module = types.ModuleType(f"sample_{engine}_{path.parent.name}_{path.stem}")
    module.__file__ = str(path)
    # Importable by name, as the sample's own module would be: dataclasses look their module
    # up, and MAF's checkpoints pickle a sample's classes by module and name.
    sys.modules[module.__name__] = module
    # dont_inherit: this file's ``from __future__ import annotations`` must not reach the port.
    code = compile(source, str(path), "exec", dont_inherit=True)
    exec(code, module.__dict__)  # noqa: S102 - our own test files
    return module


# Set inside a recorded run; the sub-workflows it runs inherit it (same task or a child task).
_inside_run: contextvars.ContextVar[bool] = contextvars.ContextVar("inside_run", default=False)


@contextlib.contextmanager
def _recording(events: list[str]) -> Iterator[None]:
    """Record each event any workflow run emits, on both engines, at the one generator each
    engine passes every event through."""
    from agent_framework._workflows import _functional as maf_functional
    from agent_framework._workflows import _workflow as maf_workflow

    from workflows.functional import runner as our_functional

    # ``workflows.workflow`` (the attribute) is the functional ``@workflow`` decorator.
    our_workflow = importlib.import_module("workflows.workflow")

    def wrap(original: Callable[..., AsyncIterator[Any]]) -> Callable[..., AsyncIterator[Any]]:
        async def recorded(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            if _inside_run.get():  # a sub-workflow's own run: its caller sees only the parent's
                async for event in original(*args, **kwargs):
                    yield event
                return
            run = original(*args, **kwargs)
            try:
                while True:
                    # Marked only while the run advances: the tasks it starts inherit the mark,
                    # the caller does not keep it, so the caller's next run is recorded too.
                    token = _inside_run.set(True)
                    try:
                        event = await anext(run)
                    except StopAsyncIteration:
                        return
                    finally:
                        _inside_run.reset(token)
                    events.append(_label(event))
                    yield event
            finally:
                await run.aclose()  # type: ignore[attr-defined]

        return recorded

    patches = [
        (maf_workflow.Workflow, "_run_workflow_with_tracing"),
        (our_workflow.Workflow, "_events"),
        (maf_functional.FunctionalWorkflow, "_run_core"),
        (our_functional.FunctionalWorkflow, "_events"),
    ]
    saved = [(owner, name, getattr(owner, name)) for owner, name in patches]
    try:
        for owner, name, original in saved:
            setattr(owner, name, wrap(original))
        yield
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


def _label(event: Any) -> str:
    label: str = event.type
    if event.type in ("output", "intermediate", "request_info"):
        who = getattr(event, "executor_id", None) or getattr(event, "source_executor_id", "")
        label += f":{who}:{type(event.data).__name__}"
    return label


def run_sample(path: Path, engine: str) -> SampleRun:
    with _maf_feature_stages_quiet():
        return _run_sample(path, engine)


@contextlib.contextmanager
def _maf_feature_stages_quiet() -> Iterator[None]:
    """MAF warns once per process when an experimental API (its functional workflows) is first
    used; the suite makes warnings errors, and the reference run must not fail on that one."""
    from agent_framework._feature_stage import ExperimentalWarning

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=ExperimentalWarning)
        yield


def _run_sample(path: Path, engine: str) -> SampleRun:
    module = load_port(path, engine)
    answers = iter(getattr(module, "INPUTS", ()))

    def scripted_input(prompt: str = "") -> str:
        print(prompt, end="")
        try:
            line = next(answers)
        except StopIteration:
            raise AssertionError(f"{path.name} asked for more input than INPUTS holds") from None
        print(line)
        return line

    events: list[str] = []
    out = io.StringIO()
    error = None
    original_input = builtins.input
    builtins.input = scripted_input
    try:
        with _recording(events), contextlib.redirect_stdout(out):
            try:
                asyncio.run(module.main())
            except Exception as exc:  # noqa: BLE001 - compared between the engines
                error = f"{type(exc).__name__}: {exc}"
    finally:
        builtins.input = original_input
    return SampleRun(out.getvalue(), events, error)


@pytest.fixture
def sample_runner() -> Callable[[Path, str], SampleRun]:
    return run_sample


@pytest.fixture
def sample_port() -> Callable[[Path, str], types.ModuleType]:
    def load(path: Path, engine: str) -> types.ModuleType:
        with _maf_feature_stages_quiet():
            return load_port(path, engine)

    return load
