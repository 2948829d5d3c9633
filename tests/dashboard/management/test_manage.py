"""manage.py: bootstraps .venv on a machine without a usable Python/Django, then re-execs."""

from __future__ import annotations

import importlib.util
import os
import subprocess
from types import ModuleType
from typing import Any

import pytest

from dashboard.config.settings import BASE_DIR


class Reexecuted(Exception):
    """Stands in for os.execv, which would replace the test process."""


@pytest.fixture
def manage(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    spec = importlib.util.spec_from_file_location("superstep_manage", BASE_DIR / "manage.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setenv(module.REEXEC_MARKER, "")  # restored (removed) after the test
    return module


def test_manage_py_bootstraps_then_reexecs_with_the_venv_python(
    manage: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    bootstraps: list[list[str]] = []

    def execv(path: str, argv: list[str]) -> None:
        raise Reexecuted(path, argv)

    def call(command: list[str], **kwargs: Any) -> int:
        bootstraps.append(command)
        return 0

    monkeypatch.setattr(manage, "django_is_usable", lambda: False)
    monkeypatch.setattr(subprocess, "call", call)
    monkeypatch.setattr(os, "execv", execv)
    monkeypatch.setattr("sys.argv", ["manage.py", "demo", "--port", "9000"])

    with pytest.raises(Reexecuted) as reexec:
        manage.main()

    assert bootstraps == [["bash", str(BASE_DIR / ".ci" / "bootstrap")]]
    venv_python = str(BASE_DIR / ".venv" / "bin" / "python")
    assert reexec.value.args == (
        venv_python,
        [venv_python, str(BASE_DIR / "manage.py"), "demo", "--port", "9000"],
    )
    assert os.environ[manage.REEXEC_MARKER] == "1"


def test_manage_py_stops_instead_of_looping_when_bootstrap_did_not_help(
    manage: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(manage, "django_is_usable", lambda: False)
    monkeypatch.setenv(manage.REEXEC_MARKER, "1")

    with pytest.raises(SystemExit, match="still cannot import Django"):
        manage.main()


def test_manage_py_reports_a_failed_bootstrap(
    manage: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(manage, "django_is_usable", lambda: False)
    monkeypatch.setattr(subprocess, "call", lambda command, **kwargs: 1)

    with pytest.raises(SystemExit, match="bootstrap failed"):
        manage.main()


def test_manage_py_uses_this_python_when_it_can_run_django(manage: ModuleType) -> None:
    assert manage.django_is_usable()
