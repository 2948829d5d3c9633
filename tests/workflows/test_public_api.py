"""``workflows/__init__.py`` is the one door in: a sorted, complete ``__all__``, and no Django."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import subprocess
import sys
import types

import workflows
from workflows import exceptions, storage


def test_all_is_sorted_and_has_no_duplicates() -> None:
    assert workflows.__all__ == sorted(workflows.__all__)
    assert len(set(workflows.__all__)) == len(workflows.__all__)


def test_every_name_in_all_is_importable() -> None:
    for name in workflows.__all__:
        assert getattr(workflows, name, None) is not None, name
    namespace: dict[str, object] = {}
    exec("from workflows import *", namespace)  # noqa: S102 - a literal, to test star-import
    assert set(workflows.__all__) <= set(namespace)


def test_every_public_member_of_the_package_is_in_all() -> None:
    # Like httpx's test_exported_members: whatever `import workflows` exposes is deliberate.
    # dir(), not vars(): the agent names load on first use, which another test in this process
    # may or may not have made.
    exposed = {
        name
        for name in dir(workflows)
        if not name.startswith("_") and not isinstance(getattr(workflows, name), types.ModuleType)
    }
    assert exposed == set(workflows.__all__)


def test_every_exception_is_re_exported() -> None:
    missing = set(exceptions.__all__) - set(workflows.__all__)
    assert not missing, f"exceptions not exported: {sorted(missing)}"
    errors = {
        name
        for name, value in vars(exceptions).items()
        if inspect.isclass(value)
        and issubclass(value, Exception)
        and value.__module__ == exceptions.__name__
    }
    assert errors <= set(workflows.__all__)


def test_the_author_api_and_the_storage_author_api_are_apart() -> None:
    # What only storage authors need (the record/parts split, the codec) is not in the author
    # API; the storages an author builds a workflow with are in both.
    storage_only = {
        "CheckpointSummary",
        "SummaryStorage",
        "PartCache",
        "SplitCheckpoint",
        "split_checkpoint",
        "join_checkpoint",
        "summarize_record",
        "encode",
        "decode",
        "dumps",
        "loads",
        "resolve_type_name",
    }
    assert storage_only <= set(storage.__all__)
    assert not storage_only & set(workflows.__all__)
    assert {"CheckpointStorage", "FileCheckpointStorage", "InMemoryCheckpointStorage"} <= (
        set(workflows.__all__) & set(storage.__all__)
    )
    assert storage.__all__ == sorted(storage.__all__)


def test_every_public_name_is_documented() -> None:
    # Named in its package's overview, and (classes and functions) with a docstring of its own.
    for package in (workflows, storage):
        overview = package.__doc__ or ""
        for name in package.__all__:
            assert re.search(rf"``{re.escape(name)}``", overview), (
                f"{package.__name__}.{name} is not described in the package docstring"
            )
            value = getattr(package, name)
            if inspect.isclass(value) or inspect.isfunction(value):
                assert (value.__doc__ or "").strip(), f"{package.__name__}.{name} has no docstring"


def test_public_classes_say_they_come_from_the_package_they_are_documented_in() -> None:
    for name in workflows.__all__:
        value = getattr(workflows, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert value.__module__.startswith("workflows."), name


def test_every_engine_module_imports_on_its_own() -> None:
    for info in pkgutil.walk_packages(workflows.__path__, prefix="workflows."):
        importlib.import_module(info.name)


def test_importing_the_engine_does_not_import_django_pytest_or_the_agent_layer() -> None:
    code = (
        "import workflows, sys; "
        "assert 'django' not in sys.modules, 'django'; "
        "assert 'pytest' not in sys.modules, 'pytest'; "
        "assert 'pydantic' not in sys.modules, 'pydantic'; "
        "assert 'agent_framework' not in sys.modules, 'agent_framework'"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr


def test_the_exact_django_check_of_the_issue_holds() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import workflows, sys; assert 'django' not in sys.modules"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_no_engine_source_file_mentions_django_imports() -> None:
    root = workflows.__path__[0]
    offenders = []
    for info in pkgutil.walk_packages([root], prefix="workflows."):
        source = inspect.getsource(importlib.import_module(info.name))
        if "import django" in source or "from django" in source:
            offenders.append(info.name)
    assert offenders == []
