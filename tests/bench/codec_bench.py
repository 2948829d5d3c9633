"""Codec benchmark: checkpoint JSON text against the standard library's ``json`` of the same data.

A 64 KiB structured state of ~2,400 small records (``{"id", "q", "s"}``) that changed, as a
superstep hands it to the storage, timed in the same run as ``json.dumps`` / ``json.loads`` of
the same data, interleaved round by round so noise hits both sides:

* encode:  ``codec.encode_text(state)`` (what the storages call per large part)
           / ``json.dumps(state, ensure_ascii=False, separators=(",", ":"))``   target <= 1.5
* decode:  ``codec.decode(codec.loads(text))`` / ``json.loads(text)``            target <= 1.5

Reported for information: the two-step public path ``dumps(encode(state))``, the same figures
with orjson switched off (the standard-library fallback), and workloads the fast path does not
take (records holding a datetime each, which need tags). Every text is checked byte for byte
against the standard library's before anything is timed.

Usage::

    .venv/bin/python tests/bench/codec_bench.py [--rounds 30] [--number 50] [--no-fail]

Exit status 0 when both targets pass (or with ``--no-fail``), 1 otherwise.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from workflows import codec, fast_json

KIB = 1024
TARGET = 1.5


def records(target_bytes: int, *, dated: bool = False) -> dict[str, Any]:
    """``{"items": [...], "counter": 0}`` of at least ``target_bytes`` of compact JSON."""
    items: list[dict[str, Any]] = []
    size = 0
    day = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
    while size < target_bytes:
        i = len(items)
        record: dict[str, Any] = {"id": i, "q": i % 97, "s": f"{i:x}"}
        if dated:
            record["at"] = day + dt.timedelta(minutes=i)
        items.append(record)
        size += len(codec.dumps(codec.encode(record))) + 1
    return {"items": items, "counter": 0}


def stdlib_dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def paired(
    ours: Callable[[], Any], base: Callable[[], Any], rounds: int, number: int
) -> dict[str, float]:
    """Median of per-round ratios ours/base, each round timing both back to back."""
    ratios, ours_us, base_us = [], [], []
    for i in range(rounds):
        pair = [(ours, ours_us), (base, base_us)]
        for func, into in pair if i % 2 == 0 else reversed(pair):
            started = time.perf_counter()
            for _ in range(number):
                func()
            into.append((time.perf_counter() - started) / number * 1e6)
        ratios.append(ours_us[-1] / base_us[-1])
    return {
        "ratio": statistics.median(ratios),
        "ours_us": min(ours_us),
        "base_us": min(base_us),
    }


def measure(state: dict[str, Any], rounds: int, number: int) -> dict[str, dict[str, float]]:
    text = stdlib_dumps(state)
    if not codec.encode_text(state) == codec.dumps(codec.encode(state)) == text:
        raise RuntimeError("encode_text, dumps(encode()) and json.dumps differ")
    raw = text.encode()
    if codec.decode(codec.loads(raw)) != state:
        raise RuntimeError("decode(loads()) does not give the state back")

    def dump() -> str:
        # mutate one record, as a superstep does, so nothing can be cached between calls
        items = state["items"]
        state["counter"] += 1
        items[state["counter"] % len(items)]["q"] += 1
        return codec.encode_text(state)

    return {
        "encode_text": paired(dump, lambda: stdlib_dumps(state), rounds, number),
        "dumps(encode)": paired(
            lambda: codec.dumps(codec.encode(state)), lambda: stdlib_dumps(state), rounds, number
        ),
        "decode(loads)": paired(
            lambda: codec.decode(codec.loads(raw)), lambda: json.loads(raw), rounds, number
        ),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30, help="paired rounds (default 30)")
    parser.add_argument("--number", type=int, default=50, help="calls per round (default 50)")
    parser.add_argument("--no-fail", action="store_true", help="always exit 0; just report")
    args = parser.parse_args(argv)

    print(f"Python {platform.python_version()} on {platform.platform()}")
    accelerator = fast_json.orjson
    print(f"orjson {getattr(accelerator, '__version__', 'not installed')}")
    plain = records(64 * KIB)
    dated = records(64 * KIB, dated=True)
    print(
        f"state: {len(plain['items']):,} records, {len(stdlib_dumps(plain)):,} bytes of JSON; "
        f"ratio = median over {args.rounds} paired rounds of (ours / json), time = best round"
    )
    rows: list[tuple[str, str, dict[str, float]]] = []
    for label, state in (("records", plain), ("records+datetime", dated)):
        base = state if label == "records" else json.loads(codec.dumps(codec.encode(state)))
        for name, figure in measure_any(state, base, args).items():
            rows.append((label, name, figure))
    if accelerator is not None:
        fast_json.orjson = None  # the standard-library fallback, same bytes
        try:
            for name, figure in measure(records(64 * KIB), args.rounds, args.number).items():
                rows.append(("records, no orjson", name, figure))
        finally:
            fast_json.orjson = accelerator

    header = f"{'workload':>20} {'operation':>14} | {'ours us':>9} {'json us':>9} | {'ratio':>6}"
    print(header)
    print("-" * len(header))
    for label, name, figure in rows:
        print(
            f"{label:>20} {name:>14} | {figure['ours_us']:9.1f} {figure['base_us']:9.1f} | "
            f"{figure['ratio']:6.2f}"
        )
    checks = [
        (name, figure["ratio"])
        for label, name, figure in rows
        if label == "records" and name in ("encode_text", "decode(loads)")
    ]
    print()
    failed = False
    for name, ratio in checks:
        status = "PASS" if ratio <= TARGET else "FAIL"
        failed |= status == "FAIL"
        print(f"  {status}  {name} / json: {ratio:.2f}  [<= {TARGET}]")
    print("RESULT: " + ("FAIL" if failed else "PASS"))
    return 1 if failed and not args.no_fail else 0


def measure_any(
    state: dict[str, Any], base: dict[str, Any], args: argparse.Namespace
) -> dict[str, dict[str, float]]:
    """``measure`` for a state json cannot write as it is: json's side gets the encoded data."""
    if state is base:
        return measure(state, args.rounds, args.number)
    raw = codec.dumps(codec.encode(state)).encode()
    return {
        "encode_text": paired(
            lambda: codec.encode_text(state), lambda: stdlib_dumps(base), args.rounds, args.number
        ),
        "decode(loads)": paired(
            lambda: codec.decode(codec.loads(raw)),
            lambda: json.loads(raw),
            args.rounds,
            args.number,
        ),
    }


if __name__ == "__main__":
    sys.exit(main())
