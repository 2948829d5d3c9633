"""Every ported MAF sample prints the same and emits the same events on both engines.

See ``conftest.py`` for what a port is. MAF 1.23 runs each port first, as the reference; then
``workflows`` runs it with nothing but its workflow imports changed.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
PORTS = sorted(p for p in HERE.glob("*/*.py") if not p.name.startswith(("test_", "conftest", "_")))


@pytest.mark.parametrize("path", PORTS, ids=[f"{p.parent.name}/{p.stem}" for p in PORTS])
def test_a_ported_sample_behaves_as_on_maf(
    path: Path,
    sample_runner: Callable[[Path, str], Any],
    sample_port: Callable[[Path, str], types.ModuleType],
) -> None:
    maf = sample_runner(path, "maf")
    assert maf.error is None, f"the port does not run on MAF itself: {maf.error}"
    ours = sample_runner(path, "ours")
    compare = getattr(sample_port(path, "ours"), "compare", None)
    if compare is not None:
        compare(maf, ours)
        return
    assert ours.error is None, ours.error
    assert ours.normalized == maf.normalized
    assert ours.events == maf.events
