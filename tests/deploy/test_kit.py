"""The deploy kit says one thing: every recipe in deploy/ runs the Procfile's commands.

This machine (and CI) can neither build nor run a container, so the Dockerfile, the compose
file and the systemd units are checked here word for word against deploy/Procfile, which
tests/deploy/test_procfile.py runs for real, and the Procfile against the README's production
recipe (its variables at their defaults). The units also pass ``systemd-analyze verify``.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from dashboard.config.settings import BASE_DIR

DEPLOY = BASE_DIR / "deploy"
PROCESSES = ["release", "web", "worker", "beat"]


def procfile() -> dict[str, str]:
    """The Procfile's process types and their commands, in order."""
    entries = {}
    for line in (DEPLOY / "Procfile").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, command = line.partition(":")
            entries[name.strip()] = command.strip()
    return entries


def _sh_c(argv: list[str]) -> str:
    """The script of an ``sh -c SCRIPT`` command, without its leading ``exec``."""
    assert argv[:2] in (["sh", "-c"], ["/bin/sh", "-c"]), argv
    (script,) = argv[2:]
    return script.removeprefix("exec ")


def _at_defaults(command: str) -> str:
    """``${NAME:-default}`` replaced by its default, as a shell with NAME unset reads it."""
    return re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", command)


def readme_recipe() -> list[str]:
    """The commands of the README's production block, continuation lines joined, comments off."""
    readme = (BASE_DIR / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Production", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    lines = block.replace("\\\n", " ").splitlines()
    return [" ".join(line.split("  #", 1)[0].split()) for line in lines if line.strip()]


def test_the_procfile_has_a_release_step_web_worker_and_beat() -> None:
    assert list(procfile()) == PROCESSES


def test_the_procfile_runs_the_readmes_production_recipe() -> None:
    recipe = readme_recipe()
    commands = {name: _at_defaults(command) for name, command in procfile().items()}

    # The README runs collectstatic beside migrate on one line, as the release step does.
    assert commands["release"] in recipe
    assert commands["web"] in recipe and commands["web"].startswith("uvicorn --workers 2 ")
    assert commands["worker"] in recipe and commands["beat"] in recipe


def test_the_dockerfile_serves_the_procfiles_web_command() -> None:
    text = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    (cmd,) = [line for line in text.splitlines() if line.startswith("CMD ")]

    assert _sh_c(json.loads(cmd.removeprefix("CMD "))) == procfile()["web"]


def test_the_image_installs_the_locked_versions_and_nothing_unlocked() -> None:
    text = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    installs = [line for line in text.splitlines() if line.startswith("RUN pip install")]

    assert installs == [
        "RUN pip install --require-hashes -r requirements/production.lock",
        "RUN pip install --no-deps --editable .",
    ]
    assert "COPY requirements/production.lock requirements/production.lock" in text
    assert (BASE_DIR / "requirements" / "production.lock").is_file()


def _compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))
    return loaded


def test_the_compose_file_runs_each_procfile_command_in_its_own_service() -> None:
    services = _compose()["services"]
    # Compose writes the shell's "$" as "$$".
    commands = {
        name: _sh_c(s["command"]).replace("$$", "$")
        for name, s in services.items()
        if "command" in s
    }

    assert set(services) == {"postgres", "redis", "migrate", "web", "worker", "beat"}
    assert commands == {
        "migrate": procfile()["release"],
        "web": procfile()["web"],
        "worker": procfile()["worker"],
        "beat": procfile()["beat"],
    }


def test_the_compose_file_migrates_once_before_the_other_processes_start() -> None:
    services = _compose()["services"]

    assert services["migrate"]["restart"] == "no"
    for name in ("web", "worker", "beat"):
        assert services[name]["depends_on"]["migrate"] == {
            "condition": "service_completed_successfully"
        }, name
        assert services[name]["image"] == services["migrate"]["image"] == "superstep:latest"
    assert services["migrate"]["depends_on"]["postgres"] == {"condition": "service_healthy"}
    env = services["web"]["environment"]
    assert env["DATABASE_URL"].startswith("postgres://") and env["REDIS_URL"].startswith("redis://")


def _exec_start(unit: Path) -> str:
    (line,) = [
        line
        for line in unit.read_text(encoding="utf-8").splitlines()
        if line.startswith("ExecStart=")
    ]
    # systemd writes the shell's "$" as "$$".
    return _sh_c(shlex.split(line.removeprefix("ExecStart="))).replace("$$", "$")


def test_the_systemd_units_run_the_procfiles_commands() -> None:
    units = DEPLOY / "systemd"

    assert {
        name: _exec_start(units / f"superstep-{unit}.service")
        for name, unit in zip(PROCESSES, ["migrate", "web", "worker", "beat"], strict=True)
    } == procfile()
    assert "Type=oneshot" in (units / "superstep-migrate.service").read_text(encoding="utf-8")


def test_the_systemd_units_pass_systemds_own_check() -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed")
    units = sorted(str(path) for path in (DEPLOY / "systemd").glob("*.service"))

    checked = subprocess.run(
        [analyze, "verify", *units], capture_output=True, text=True, timeout=60, check=False
    )

    # It reports a directive it cannot read on stderr, and exits 0 all the same.
    assert (checked.returncode, checked.stderr) == (0, ""), checked.stderr
