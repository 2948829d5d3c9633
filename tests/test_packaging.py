"""pyproject.toml and its lock: the lock files agree with pyproject.toml, a fresh venv installs the
production lock, and the engine installs alone, without Django, and runs the README's example.

The fresh venvs are made without pip (``venv --without-pip``) and filled by this venv's pip through
``pip --python``: quicker, and its cache serves the locked files again. Installing needs PyPI or
pip's cache of the locked files; each of these tests takes seconds, not minutes. The project is
built into a wheel from a copy of its sources, so nothing is written into the checkout.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENGINE_LOCK = ROOT / "requirements" / "engine.lock"
PRODUCTION_LOCK = ROOT / "requirements" / "production.lock"
DEV_LOCK = ROOT / "requirements" / "dev.lock"
DASHBOARD_STACK = ("django", "celery", "channels", "daphne", "redis", "psycopg")


def run(*command: str | Path, cwd: Path = ROOT, env: dict[str, str] | None = None) -> str:
    """``command``'s output; a failure shows what it printed."""
    done = subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"{command} exited {done.returncode}:\n{done.stdout}{done.stderr}"
    return done.stdout


def pip_into(python: Path, *args: str | Path) -> str:
    return run(sys.executable, "-m", "pip", "--python", python, *args)


def venv_from_lock(where: Path, lock: Path, wheel: Path) -> Path:
    """The Python of a new venv at ``where``: ``lock`` with its hashes checked, then ``wheel``
    with no dependencies (all in the lock)."""
    run(sys.executable, "-m", "venv", "--without-pip", where)
    python = where / "bin" / "python"
    pip_into(python, "install", "-q", "--require-hashes", "-r", lock)
    pip_into(python, "install", "-q", "--no-deps", wheel)
    return python


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's wheel, built without build isolation (setuptools is in the dev lock)."""
    where = tmp_path_factory.mktemp("wheel")
    source = where / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    for package in ("workflows", "dashboard"):
        shutil.copytree(
            ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    out = where / "dist"
    run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
        "-w", out, source)  # fmt: skip
    (built,) = out.glob("superstep-*.whl")
    return built


def test_the_lock_files_are_uv_lock_and_its_exports_of_pyproject() -> None:
    run("bash", ".ci/lock", "--check")


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def locked_names(lock: Path) -> set[str]:
    """The (normalized) names of the packages ``lock`` pins."""
    text = lock.read_text(encoding="utf-8")
    pinned = re.findall(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==", text, flags=re.MULTILINE)
    return {normalized(name) for name in pinned}


def test_every_locked_file_has_a_hash_and_one_exact_version() -> None:
    for lock in (ROOT / "requirements").glob("*.lock"):
        text = lock.read_text(encoding="utf-8")
        requirements = re.findall(r"^([A-Za-z0-9][^ \\\n]*)", text, flags=re.MULTILINE)
        assert requirements, lock
        for requirement in requirements:
            assert re.fullmatch(r"[A-Za-z0-9._-]+==[^=\s]+", requirement), (lock, requirement)
        blocks = re.split(r"^(?=[A-Za-z0-9])", text, flags=re.MULTILINE)[1:]
        assert all("--hash=sha256:" in block for block in blocks), lock


README_EXAMPLE = re.compile(r"## What is in the box\n.*?```python\n(?P<code>.*?)```", re.DOTALL)
FIRST_RUN = "result = await workflow.run(21)"


def readme_example() -> tuple[str, str]:
    """The README's first example: its definitions, and what it does with them."""
    found = README_EXAMPLE.search((ROOT / "README.md").read_text(encoding="utf-8"))
    assert found is not None, "README.md has no example under 'What is in the box'"
    definitions, first_run, rest = found["code"].partition(FIRST_RUN)
    assert first_run, f"the README's example no longer runs {FIRST_RUN!r}"
    return definitions, first_run + rest


def as_script(body: str) -> str:
    """``body``, which awaits at its top level as the README's example does, as a script."""
    main = textwrap.indent(body, "    ")
    return f"import asyncio, json, sys\n\n\nasync def main():\n{main}\n\nasyncio.run(main())\n"


# After the README's own lines: what they made, for the test to check.
REPORT = """
print(json.dumps({
    "outputs": result.get_outputs(),
    "checkpoints": result.get_checkpoint_ids(),
    "latest": latest.checkpoint_id,
}))
"""
# In another process: the README's definitions, then a resume from the run's first checkpoint.
RESUME = """
again = await workflow.run(checkpoint_id=sys.argv[1])
print(json.dumps({"outputs": again.get_outputs(), "state": again.get_final_state().name}))
"""
ENGINE_ONLY = f"""
import importlib.util, json, workflows
print(json.dumps({{
    "workflows": workflows.__file__,
    "present": [name for name in {DASHBOARD_STACK!r} if importlib.util.find_spec(name)],
}}))
"""


@pytest.mark.slow
def test_the_engine_installs_alone_and_runs_the_readme_example(wheel: Path, tmp_path: Path) -> None:
    python = venv_from_lock(tmp_path / "venv", ENGINE_LOCK, wheel)
    work = tmp_path / "work"  # the example's ./checkpoints; and no checkout on sys.path (-I)
    work.mkdir()

    installed = json.loads(run(python, "-I", "-c", ENGINE_ONLY, cwd=work))
    assert installed["present"] == []
    assert Path(installed["workflows"]).is_relative_to(tmp_path / "venv")
    failed = subprocess.run(
        [python, "-I", "-c", "import django"], cwd=work, capture_output=True, text=True, check=False
    )
    assert failed.returncode == 1 and "No module named 'django'" in failed.stderr

    definitions, uses = readme_example()
    (work / "example.py").write_text(as_script(definitions + uses + REPORT), encoding="utf-8")
    first = json.loads(run(python, "-I", "example.py", cwd=work).splitlines()[-1])
    assert first["outputs"] == ["result: 42"]
    assert first["latest"] == first["checkpoints"][-1]
    assert len(first["checkpoints"]) == 2  # after each superstep
    assert any((work / "checkpoints").rglob("*.json*"))

    (work / "resume.py").write_text(as_script(definitions + RESUME), encoding="utf-8")
    out = run(python, "-I", "resume.py", first["checkpoints"][0], cwd=work)
    assert json.loads(out.splitlines()[-1]) == {"outputs": ["result: 42"], "state": "IDLE"}


@pytest.mark.slow
def test_a_fresh_venv_installs_the_production_lock_and_the_dashboard_checks_pass(
    wheel: Path, tmp_path: Path
) -> None:
    python = venv_from_lock(tmp_path / "venv", PRODUCTION_LOCK, wheel)
    pip_into(python, "check")
    # Nothing the extras ask for is missing from the lock: with no index, pip has nothing to add.
    report = pip_into(python, "install", "--no-index", "--dry-run", "-q", "--report", "-",
                      f"superstep[dashboard,agents,tracing] @ {wheel.as_uri()}")  # fmt: skip
    assert json.loads(report)["install"] == []

    work = tmp_path / "work"
    work.mkdir()
    env = {"DJANGO_SETTINGS_MODULE": "dashboard.config.settings", "PATH": "/usr/bin:/bin"}
    run(python, "-I", "-m", "django", "check", cwd=work, env=env)


@pytest.mark.slow
def test_the_dev_lock_the_bootstrap_installs_resolves_in_a_fresh_venv(
    tmp_path: Path,
) -> None:
    run(sys.executable, "-m", "venv", "--without-pip", tmp_path / "venv")
    report = pip_into(tmp_path / "venv" / "bin" / "python", "install", "--dry-run", "-q",
                      "--require-hashes", "--report", "-", "-r", DEV_LOCK)  # fmt: skip
    taken = {normalized(item["metadata"]["name"]) for item in json.loads(report)["install"]}
    assert {"django", "pytest", "mypy", "ruff", "uv", "setuptools", "pip"} <= taken
    assert taken <= locked_names(DEV_LOCK)
