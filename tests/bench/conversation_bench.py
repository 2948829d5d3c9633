"""Conversation-growth benchmark: what a checkpoint costs as an agent's conversation grows.

One agent talks with a user executor for ``--turns`` turns (default 200): the user executor
answers each of the agent's replies with a new question (``AgentExecutorRequest``), so every
turn adds two messages to the conversation the agent executor keeps, and to its session's
history. The same workflow runs on Superstep (``workflows``) and on Microsoft Agent Framework
1.23 (``agent_framework``), each on its own ``FileCheckpointStorage`` in a fresh folder, with the
same deterministic local model (``workflows.agents.local_chat.LocalChatClient``).

Printed per engine: the bytes the checkpoint after the agent's reply of turn 10, 50, 100 and 200
added on disk (for Superstep, the bytes its storage wrote for that save: the checkpoint file
with the new blobs it carries; for MAF, that checkpoint's file), their ratio turn 200 / turn 10,
and the total over the run. MAF writes the whole conversation at every checkpoint (O(n) a save,
O(n²) a run); Superstep writes the new messages and, every 32 messages, one closed chunk.

Target: Superstep's bytes at turn 200 within 2x of its bytes at turn 10 (exit status 1 when
missed). Each engine runs in its own process (``--engine``), so neither's imports or caches
touch the other's figures.

Usage::

    python tests/bench/conversation_bench.py [--turns 200] [--json FILE]
"""

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPORTED_TURNS = (10, 50, 100, 200)
TARGET_RATIO = 2.0


def _engine_modules(engine: str) -> Any:
    if engine == "maf":
        import agent_framework as engine_module
    else:
        import workflows as engine_module
    return engine_module


def build(engine: str, folder: Path, turns: int) -> tuple[Any, Any]:
    from agent_framework import Agent, Message

    from workflows.agents.local_chat import LocalChatClient

    wf = _engine_modules(engine)

    class User(wf.Executor):  # type: ignore[misc, name-defined]
        def __init__(self) -> None:
            super().__init__(id="user")
            self.turn = 0

        @wf.handler
        async def reply(self, response: wf.AgentExecutorResponse, ctx: wf.WorkflowContext) -> None:  # type: ignore[name-defined]
            self.turn += 1
            if self.turn >= turns:
                await ctx.yield_output(f"{self.turn} turns")
                return
            question = (
                f"Question {self.turn + 1}: what comes after {response.agent_response.text[:40]}?"
            )
            await ctx.send_message(
                wf.AgentExecutorRequest(messages=[Message("user", [question])], should_respond=True)
            )

        async def on_checkpoint_save(self) -> dict[str, Any]:
            return {"turn": self.turn}

        async def on_checkpoint_restore(self, state: dict[str, Any]) -> None:
            self.turn = state.get("turn", 0)

    agent = Agent(client=LocalChatClient(name="bench-model"), name="agent", instructions="Answer.")
    user = User()
    storage = wf.FileCheckpointStorage(str(folder))
    workflow = (
        wf.WorkflowBuilder(
            start_executor=agent,
            checkpoint_storage=storage,
            name="conversation",
            max_iterations=4 * turns + 10,
        )
        .add_edge(agent, user)
        .add_edge(user, agent)
        .build()
    )
    return workflow, storage


async def measure(engine: str, turns: int) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix=f"conversation-{engine}-"))
    workflow, storage = build(engine, folder, turns)
    added: list[int] = []  # bytes per checkpoint, in save order
    if engine == "ours":
        original = storage.save

        async def counting_save(checkpoint: Any) -> str:
            before = storage.bytes_written
            checkpoint_id = await original(checkpoint)
            added.append(storage.bytes_written - before)
            return checkpoint_id

        storage.save = counting_save
    result = await workflow.run("Question 1: where do we start?")
    assert result.get_outputs()[-1] == f"{turns} turns", result.get_outputs()[-1:]
    if engine == "maf":
        checkpoints = await storage.list_checkpoints(workflow_name=workflow.name)
        checkpoints.sort(key=lambda c: c.timestamp)
        added = [(folder / f"{c.checkpoint_id}.json").stat().st_size for c in checkpoints]
    # Checkpoint 0 is the entry; then supersteps alternate agent (odd) and user (even): the
    # agent's reply of turn t is superstep 2t - 1.
    by_turn = {t: added[2 * t - 1] for t in REPORTED_TURNS if 2 * t - 1 < len(added)}
    return {"engine": engine, "checkpoints": len(added), "by_turn": by_turn, "total": sum(added)}


def run_engine(engine: str, turns: int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--engine", engine, "--turns", str(turns)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    if done.returncode != 0:
        raise SystemExit(f"{engine} run failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def report(results: list[dict[str, Any]], turns: int) -> int:
    print(f"\nA {turns}-turn conversation, bytes each checkpoint adds (after the agent's reply):")
    header = "".join(f"{'turn ' + str(t):>12}" for t in REPORTED_TURNS)
    print(f"{'engine':<10}{header}{'200/10':>9}{'whole run':>14}")
    status = 0
    for row in results:
        by_turn = {int(k): v for k, v in row["by_turn"].items()}
        cells = "".join(f"{by_turn.get(t, float('nan')):>12,.0f}" for t in REPORTED_TURNS)
        last = max(by_turn)
        ratio = by_turn[last] / by_turn[10]
        print(f"{row['engine']:<10}{cells}{ratio:>8.2f}x{row['total']:>14,}")
        if row["engine"] == "ours" and ratio > TARGET_RATIO:
            status = 1
    ours, maf = (next(r for r in results if r["engine"] == e) for e in ("ours", "maf"))
    print(
        f"\nwhole run: Superstep {ours['total'] / maf['total']:.3f}x MAF's bytes; target: "
        f"Superstep's turn {turns} within {TARGET_RATIO:.0f}x its turn 10 -> "
        f"{'PASS' if status == 0 else 'MISS'}"
    )
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--engine", choices=("ours", "maf"))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.engine:  # one engine's measurement, in this process
        print(json.dumps(asyncio.run(measure(args.engine, args.turns))))
        return 0
    results = [run_engine(engine, args.turns) for engine in ("ours", "maf")]
    status = report(results, args.turns)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return status


if __name__ == "__main__":
    sys.exit(main())
