"""Functional workflows: Microsoft Agent Framework 1.23's ``@workflow`` / ``@step`` API.

A functional workflow is a plain async function; its control flow is Python's (``if``, loops,
``asyncio.gather``). Calls of ``@step`` functions are durable: each result is saved when the
step returns, and a resumed run (after a pause for human input, or a crash, in any process)
gets the saved results back instead of calling the steps again, while plain code runs again::

    from workflows import RunContext, step, workflow

    @step
    async def write_draft(topic: str) -> str: ...

    @workflow
    async def review(topic: str, ctx: RunContext) -> str:
        draft = await write_draft(topic)
        return await ctx.request_info({"draft": draft}, response_type=str)

    pipeline = review.build(checkpoint_storage=FileCheckpointStorage("ckpts"))
    paused = await pipeline.run("AI safety")
    done = await pipeline.run(responses={"auto::0": "looks good"})

Names (all re-exported by ``workflows``): ``workflow`` and the ``FunctionalWorkflowDefinition``
it returns, whose ``build()`` makes a ``FunctionalWorkflow``; ``step`` and its
``StepWrapper``; ``RunContext`` and ``get_run_context``; ``FunctionalWorkflowAgent``
(``FunctionalWorkflow.as_agent()``, loaded on first use: it needs ``agent_framework``). For
readers of checkpoints: ``read_steps`` and its ``StepRecord``.

How a call is paired with its saved result (``identity``, ``book``): by the step's name and
code fingerprint, its bound arguments' fingerprint and its occurrence among identical calls,
so calls made concurrently pair with their own results; or by ``@step(replay_key=...)``.
Calls whose arguments have no fingerprint pair by their order among that step's calls, which
only sequential calls may do. A checkpoint written by other code (a changed step, workflow
function or helper of its module) is refused with ``StepMismatchError`` naming what changed;
a call that cannot be paired safely raises ``StepReplayError`` naming the step.

What a functional checkpoint holds (a ``WorkflowCheckpoint`` in any ``CheckpointStorage``):

- ``graph_signature``: ``{"kind": "functional", "workflow": name, "steps": [...],
  "functions": [...]}``, the code its results depend on; ``graph_signature_hash`` its hash.
- ``state``: the run's ``set_state`` keys, and the engine's records (``layout``):

  - ``state["_functional"]``: ``"format"`` (1), ``"input"`` (the run's message),
    ``"answers"`` (the answers given in the run's lineage, by request id) and ``"pages"`` (how
    many pages each list below has);
  - the ``cache`` list, in pages ``state["_functional.cache.<n>"]`` of 32 records: the saved
    results, ``{"key", "step", "result"}`` each (plus ``"requests"``, the automatic request
    ids the call used, ``"shape"`` for calls paired by order, and ``"duration_ms"``), results
    of earlier attempts included;
  - the ``steps`` list (``state["_functional.steps.<n>"]``): the journal of the attempt that
    wrote the checkpoint, per step call in call order: ``{"step", "key", "status",
    "replayed", "input", "started_at", "duration_ms"}`` (``"error"`` when it failed).
    ``status`` is ``computed``, ``replayed``, ``running`` (a concurrent call still under way)
    or ``failed``; ``input`` is the arguments in the codec's JSON form, ``{"args": [...],
    "kwargs": {...}}`` (``{"repr": text}`` when they cannot be stored); the result is the
    ``cache`` record with the same ``key``. ``read_steps(checkpoint)`` joins them.

  Full pages never change while the run goes on, so storages write them once.
- ``pending_request_info_events``: the requests the run waits for.
- ``metadata["kind"]``: ``step`` (after a step computed its result) or ``idle`` (when a run
  call ended, finished or paused); ``iteration_count``: the number of saved results;
  ``run_id``: the lineage (a resume keeps it).

Where this differs from MAF 1.23, on purpose:

- checkpoints are typed JSON (``workflows.codec``), never pickle: a step result must be a value
  the codec stores (classes named in a step's annotations, and those of results, inputs and
  requests the run holds, are registered for it); one it cannot store fails the save with a
  ``CheckpointEncodeError`` naming the step. MAF's own checkpoint layout is not read.
- a checkpoint written by other code fails with ``StepMismatchError`` saying what changed (MAF:
  a bare ``ValueError``); a call paired by order keeps its argument types, so a call of another
  shape is a mismatch rather than a replay; order-paired results never stand in for calls that
  have a fingerprint (MAF reads them as a fallback, for its pre-1.23 checkpoints).
- values the codec stores (chat messages, registered dataclasses...) have an argument
  fingerprint, so concurrent agent steps need no ``replay_key``.
- answers given in a lineage are kept (``"answers"``) and apply again on resume: answering the
  second request of a run does not ask the first one again (MAF needs every answer each time).
- failures carry their message and traceback (MAF's leave them out unless sensitive data is
  on), as graph runs do; ``run()`` takes ``run_id=`` (a new lineage, or a fork of a resumed
  one); no ``ExperimentalWarning``; a stream its caller dropped frees the workflow object.
"""

from __future__ import annotations

from typing import Any as _Any

from .context import RunContext, get_run_context
from .decorators import FunctionalWorkflowDefinition, workflow
from .journal import StepRecord, read_steps
from .runner import FunctionalWorkflow
from .steps import StepWrapper, step


def __getattr__(name: str) -> _Any:
    if name == "FunctionalWorkflowAgent":
        from .agent import FunctionalWorkflowAgent

        return FunctionalWorkflowAgent
    raise AttributeError(f"module 'workflows.functional' has no attribute {name!r}")


__all__ = [
    "FunctionalWorkflow",
    "FunctionalWorkflowAgent",
    "FunctionalWorkflowDefinition",
    "RunContext",
    "StepRecord",
    "StepWrapper",
    "get_run_context",
    "read_steps",
    "step",
    "workflow",
]
