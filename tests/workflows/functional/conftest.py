"""Functional-workflow tests: ``test_maf_functional_*.py`` run on both engines.

Those files are MAF's own tests with their workflow imports renamed to ``workflows``. pytest
collects each of them as written (our engine) and a second time, as ``<file>[maf]``, with the
imports pointed back at ``agent_framework``: the same test bodies then run on MAF 1.23 itself,
which proves the port asks nothing of our engine that MAF does not do.

``engine_names`` hands tests written for this suite the two engines' public names, so one test
can run the same workflow on both (``@pytest.mark.parametrize("engine", ENGINES)``).
"""

from __future__ import annotations

import re
import sys
import types
import warnings
from pathlib import Path
from typing import Any

import pytest

_MAF_PREFIX = "test_maf_functional_"
_TO_MAF = (
    (
        re.compile(r"^(\s*)from workflows\.exceptions import", re.MULTILINE),
        r"\1from agent_framework.exceptions import",
    ),
    (re.compile(r"^(\s*)from workflows import", re.MULTILINE), r"\1from agent_framework import"),
)
# MAF marks its functional API experimental and warns once per process on first use; the
# suite turns warnings into errors, so the MAF copies let that one through.
_MAF_WARNING = "ignore::agent_framework._feature_stage.ExperimentalWarning"

ENGINES = ("maf", "ours")


class _MafModule(pytest.Module):
    """A test file collected with its workflow imports pointed at ``agent_framework``."""

    def _getobj(self) -> types.ModuleType:
        source = self.path.read_text()
        for pattern, replacement in _TO_MAF:
            source = pattern.sub(replacement, source)
        module = types.ModuleType(f"maf_{self.path.stem}")
        module.__file__ = str(self.path)
        sys.modules[module.__name__] = module  # dataclasses look their module up
        code = compile(source, str(self.path), "exec", dont_inherit=True)
        with warnings.catch_warnings():  # module-level @step is MAF's first use
            warnings.filterwarnings("ignore", category=_experimental_warning())
            exec(code, module.__dict__)  # noqa: S102 - our own test file
        return module


def _experimental_warning() -> type[Warning]:
    from agent_framework._feature_stage import ExperimentalWarning

    return ExperimentalWarning


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.suffix == ".py" and file_path.name.startswith(_MAF_PREFIX):
        name = f"{file_path.name}[maf]"
        nodeid = f"{parent.nodeid}/{name}" if parent.nodeid else name
        return _MafModule.from_parent(parent, path=file_path, name=name, nodeid=nodeid)
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if isinstance(item.getparent(_MafModule), _MafModule):
            item.add_marker(pytest.mark.filterwarnings(_MAF_WARNING))


class EngineNames:
    """One engine's public names: ``names.workflow``, ``names.step``, ``names.RunContext``..."""

    def __init__(self, engine: str) -> None:
        self.engine = engine
        if engine == "maf":
            import agent_framework

            self._module: Any = agent_framework
        else:
            import workflows

            self._module = workflows

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)


@pytest.fixture
def engine_names() -> type[EngineNames]:
    return EngineNames
