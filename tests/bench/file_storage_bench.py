"""File storage benchmark: finding the latest checkpoint, and saving a changing 64 KiB state.

Find-latest. For each folder size (``--sizes``, default 100, 1,000, 10,000 and 100,000
checkpoints of small states, 100 per run, one workflow) the folder is seeded once (with fsync
switched off: seeding is not what is measured), then each timed call opens a *fresh*
``FileCheckpointStorage`` on it and asks ``get_latest(run_id=...)`` of a random run, or
``get_latest(workflow_name=...)``. Beside them, in the same run: one small read (open, read,
close of the newest checkpoint's file: the physical limit) and ``get_latest()`` without a
filter, which replays ``index.jsonl`` as every ``get_latest`` did before the latest records.
Targets: a run's and a workflow's latest <= 1 ms at 10,000 checkpoints, and flat: at most 2x
between the smallest and the largest folder.

Write. A 64 KiB state of ~2,400 small records in which one record changes per save (so the
large part is encoded and written every time), saved through ``storage.save``; in alternating
rounds, fsync'ed atomic writes (temporary file, write, fsync, rename, fsync of the folder) of the
same checkpoint file's bytes in the same folder. The disk's fsync latency drifts, so the figure
is the median of the per-round ratios (target <= 1.5); the CPU time of both is printed too.

Usage::

    .venv/bin/python tests/bench/file_storage_bench.py [--sizes 100,1000,10000,100000]
        [--calls 150] [--saves 50] [--rounds 20] [--quick] [--dir FOLDER] [--no-fail]

``--quick``: sizes up to 10,000 and fewer calls. Exit status 0 when every target passes (or
with ``--no-fail``), 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from workflows import FileCheckpointStorage, WorkflowCheckpoint
from workflows.storage.file import atomic_write
from workflows.testing import make_checkpoint

KIB = 1024
PER_RUN = 100
TARGET_LATEST_MS = 1.0
TARGET_FLAT = 2.0
TARGET_WRITE = 1.5


@contextmanager
def no_fsync() -> Iterator[None]:
    real = os.fsync
    os.fsync = lambda fd: None
    try:
        yield
    finally:
        os.fsync = real


def small_checkpoint(run: int, step: int, previous: str | None) -> WorkflowCheckpoint:
    return make_checkpoint(
        workflow_name="bench-latest",
        run_id=f"run-{run:06d}",
        seconds=run * PER_RUN + step,
        iteration_count=step,
        previous_checkpoint_id=previous,
        state={"step": step, "note": f"run {run} step {step}"},
        executor_states={"worker": {"done": step, "seen": list(range(step % 10))}},
    )


async def seed(folder: Path, count: int) -> None:
    storage = FileCheckpointStorage(folder)
    runs = max(1, count // PER_RUN)
    with no_fsync():
        for run in range(runs):
            previous = None
            for step in range(min(PER_RUN, count)):
                checkpoint = small_checkpoint(run, step, previous)
                previous = await storage.save(checkpoint)


def timed(call: Callable[[], Any], calls: int) -> list[float]:
    """Seconds per call, each on a fresh event loop turn (the storage is opened inside)."""
    out = []
    for _ in range(calls):
        started = time.perf_counter()
        call()
        out.append(time.perf_counter() - started)
    return out


def find_latest(folder: Path, count: int, calls: int) -> dict[str, float]:
    runs = max(1, count // PER_RUN)
    rng = random.Random(count)
    newest = small_checkpoint(runs - 1, min(PER_RUN, count) - 1, None)
    loop = asyncio.new_event_loop()

    def by_run() -> None:
        run = rng.randrange(runs)
        storage = FileCheckpointStorage(folder)
        found = loop.run_until_complete(storage.get_latest(run_id=f"run-{run:06d}"))
        assert found is not None and found.iteration_count == min(PER_RUN, count) - 1

    def by_workflow() -> None:
        storage = FileCheckpointStorage(folder)
        found = loop.run_until_complete(storage.get_latest(workflow_name="bench-latest"))
        assert found is not None and found.timestamp == newest.timestamp

    def by_index() -> None:
        storage = FileCheckpointStorage(folder)
        found = loop.run_until_complete(storage.get_latest())
        assert found is not None and found.timestamp == newest.timestamp

    latest_id = loop.run_until_complete(
        FileCheckpointStorage(folder).get_latest(workflow_name="bench-latest")
    )
    assert latest_id is not None
    newest_file = folder / "checkpoints" / f"{latest_id.checkpoint_id}.json"

    def one_read() -> None:
        with open(newest_file, "rb") as fh:
            fh.read()

    figures: dict[str, list[float]] = {"read": [], "run": [], "workflow": [], "index": []}
    index_calls = max(3, min(calls, 2_000_000 // max(count, 1)))
    for _ in range(3):  # interleaved, so drift hits every column alike
        figures["read"] += timed(one_read, calls // 3)
        figures["run"] += timed(by_run, calls // 3)
        figures["workflow"] += timed(by_workflow, calls // 3)
        figures["index"] += timed(by_index, max(1, index_calls // 3))
    loop.close()
    return {name: statistics.median(values) * 1e3 for name, values in figures.items()}


# ------------------------------------------------------------------------------------ write


def records(target_bytes: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    size = 0
    while size < target_bytes:
        i = len(items)
        items.append({"id": i, "q": i % 97, "s": f"{i:x}"})
        size += len(f'{{"id":{i},"q":{i % 97},"s":"{i:x}"}}') + 1
    return items


async def write_rounds(folder: Path, saves: int, rounds: int) -> dict[str, Any]:
    """Rounds of ``saves`` saves and as many fsync'ed writes, in alternating order; wall and
    CPU time (the process's own: what the storage adds, without the disk's wait) of each."""
    items = records(64 * KIB)
    probe = folder / "fsync-probe"
    storage = FileCheckpointStorage(folder / "write")
    data = b""
    step = 0
    previous: str | None = None
    figures: dict[str, list[float]] = {"save": [], "save_cpu": [], "write": [], "write_cpu": []}
    ratios = []

    async def save_round() -> tuple[float, float]:
        nonlocal step, previous, data
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(saves):
            step += 1
            items[step % len(items)]["q"] += 1
            checkpoint = make_checkpoint(
                workflow_name="bench-write",
                run_id="write",
                seconds=step,
                previous_checkpoint_id=previous,
                executor_states={"loop": {"items": items, "counter": step}},
            )
            previous = await storage.save(checkpoint)
        done = (time.perf_counter() - wall) / saves, (time.process_time() - cpu) / saves
        data = (storage.root / "checkpoints" / f"{previous}.json").read_bytes()
        return done

    def write_round() -> tuple[float, float]:
        shutil.rmtree(probe, ignore_errors=True)
        probe.mkdir()
        wall, cpu = time.perf_counter(), time.process_time()
        for i in range(saves):
            atomic_write(probe / f"{step}-{i:06d}.json", data)
        return (time.perf_counter() - wall) / saves, (time.process_time() - cpu) / saves

    await save_round()  # warm up: the first save of a part encodes it whatever happens
    for round_ in range(rounds):
        if round_ % 2 == 0:
            save, write = await save_round(), write_round()
        else:
            write = write_round()
            save = await save_round()
        ratios.append(save[0] / write[0])
        for key, value in zip(figures, (*save, *write), strict=True):
            figures[key].append(value * 1e6)
    shutil.rmtree(probe, ignore_errors=True)
    return {
        "ratio": statistics.median(ratios),
        "ratios": ratios,
        **{f"{key}_us": statistics.median(values) for key, values in figures.items()},
        "bytes": len(data),
        "records": len(items),
    }


# ------------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,1000,10000,100000")
    parser.add_argument("--calls", type=int, default=150, help="timed calls per figure")
    parser.add_argument("--saves", type=int, default=50, help="saves per write round")
    parser.add_argument("--rounds", type=int, default=20, help="paired write rounds")
    parser.add_argument("--quick", action="store_true", help="sizes up to 10,000, fewer calls")
    parser.add_argument("--dir", type=Path, default=None, help="where to write (default: tmp)")
    parser.add_argument("--no-fail", action="store_true", help="always exit 0; just report")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.quick:
        sizes = [s for s in sizes if s <= 10_000]
        args.calls, args.rounds = 60, 10

    folder = Path(tempfile.mkdtemp(prefix="superstep-file-bench-", dir=args.dir)).resolve()
    print(f"Python {platform.python_version()} on {platform.platform()}, {os.cpu_count()} CPUs")
    print(f"folder {folder}")
    failed = False
    try:
        rows = []
        for count in sizes:
            where = folder / f"latest-{count}"
            started = time.perf_counter()
            asyncio.run(seed(where, count))
            print(
                f"  seeded {count:,} checkpoints in {time.perf_counter() - started:.1f} s",
                file=sys.stderr,
                flush=True,
            )
            rows.append((count, find_latest(where, count, args.calls)))
            shutil.rmtree(where, ignore_errors=True)
        print()
        print("Find the latest checkpoint on a fresh storage object (median ms per call):")
        head = (
            f"{'checkpoints':>12} | {'one read':>9} | {'by run':>8} {'x read':>7} | "
            f"{'by workflow':>11} {'x read':>7} | {'index replay':>12}"
        )
        print(head)
        print("-" * len(head))
        for count, f in rows:
            print(
                f"{count:>12,} | {f['read']:9.3f} | {f['run']:8.3f} {f['run'] / f['read']:7.1f} | "
                f"{f['workflow']:11.3f} {f['workflow'] / f['read']:7.1f} | {f['index']:12.3f}"
            )

        write = asyncio.run(write_rounds(folder, args.saves, args.rounds))
        print()
        print(
            f"Save of a changing 64 KiB state ({write['records']:,} records, checkpoint file "
            f"{write['bytes']:,} bytes) / fsync'ed atomic write of the same bytes:"
        )
        print(
            f"  save {write['save_us']:,.0f} us, write {write['write_us']:,.0f} us; paired ratios "
            + " ".join(f"{r:.2f}" for r in write["ratios"])
            + f" (median {write['ratio']:.2f})"
        )
        print(
            f"  CPU time per save {write['save_cpu_us']:,.0f} us, per write "
            f"{write['write_cpu_us']:,.0f} us (what the storage adds to the disk's wait)"
        )

        print()
        print("Targets:")
        checks = []
        at = {count: f for count, f in rows}
        if 10_000 in at:
            for kind in ("run", "workflow"):
                checks.append(
                    (f"latest by {kind} at 10,000 (ms)", at[10_000][kind], TARGET_LATEST_MS)
                )
        if len(rows) > 1:
            for kind in ("run", "workflow"):
                flat = rows[-1][1][kind] / rows[0][1][kind]
                checks.append(
                    (f"latest by {kind}, {rows[-1][0]:,} / {rows[0][0]:,}", flat, TARGET_FLAT)
                )
        checks.append(("save / fsync'ed write (64 KiB changing)", write["ratio"], TARGET_WRITE))
        for name, value, limit in checks:
            status = "PASS" if value <= limit else "FAIL"
            failed |= status == "FAIL"
            print(f"  {status}  {name}: {value:.3f}  [<= {limit}]")
        print("RESULT: " + ("FAIL" if failed else "PASS"))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 1 if failed and not args.no_fail else 0


if __name__ == "__main__":
    sys.exit(main())
