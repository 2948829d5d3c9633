"""dashboard/catalog/sources.py and the catalog built from it: entry points of
installed packages, SUPERSTEP_WORKFLOWS modules, settings, the demo only in demo mode; clashes
and broken sources refused at startup with both sources named."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from dashboard import catalog
from dashboard.catalog.sources import DEMO_WORKFLOWS, ENTRY_POINT_GROUP, Registration, discover
from dashboard.config.settings import BASE_DIR
from workflows import Workflow

EnvBuilder = Callable[..., dict[str, str]]

# A module of workflows as a user writes one: a builder and the WORKFLOWS dict naming it.
FLOWS = (
    """
from dataclasses import dataclass

from workflows import CheckpointStorage, Executor, Workflow, WorkflowBuilder, """
    """WorkflowContext, handler


@dataclass
class Parcel:
    weight: int = 1


class Weigh(Executor):
    @handler
    async def weigh(self, parcel: Parcel, ctx: WorkflowContext[None, int]) -> None:
        await ctx.yield_output(parcel.weight * 2)


def build_{name}(checkpoint_storage: CheckpointStorage | None = None) -> Workflow:
    return WorkflowBuilder(
        start_executor=Weigh(id="weigh"), name="{name}", checkpoint_storage=checkpoint_storage
    ).build()


WORKFLOWS = {{"{name}": build_{name}}}
"""
)


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory on sys.path for this test's modules and dist-infos; they leave with it."""
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        del sys.modules[name]


def write_module(site: Path, module: str, source: str) -> None:
    (site / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")


def install_distribution(site: Path, name: str, entry_points: dict[str, str]) -> None:
    """What `pip install` leaves for a package declaring superstep.workflows entry points."""
    info = site / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    lines = [f"[{ENTRY_POINT_GROUP}]", *(f"{k} = {v}" for k, v in entry_points.items())]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")


def find(
    *, modules: tuple[str, ...] = (), demo: bool = False, paths: dict[str, str] | None = None
) -> dict[str, Registration]:
    return discover(
        modules=modules, settings_paths=paths or {}, demo_paths=DEMO_WORKFLOWS if demo else None
    )


# ------------------------------------------------------------------------------ the sources


def test_discover_registers_an_installed_packages_entry_points(site: Path) -> None:
    write_module(site, "sst_parcels", FLOWS.format(name="weigh"))
    install_distribution(site, "sst-parcels", {"parcel-weigh": "sst_parcels:build_weigh"})

    found = find()

    registration = found["parcel-weigh"]
    assert registration.source == "entry point"
    assert "sst-parcels" in registration.origin and "sst_parcels:build_weigh" in registration.origin
    assert registration.target == "sst_parcels:build_weigh"
    assert isinstance(registration.builder(checkpoint_storage=None), Workflow)


def test_discover_reads_the_workflows_dict_of_each_named_module(site: Path) -> None:
    write_module(site, "sst_first", FLOWS.format(name="first"))
    write_module(site, "sst_second", FLOWS.format(name="second"))

    found = find(modules=("sst_first", "sst_second", "sst_first"))

    assert list(found) == ["first", "second"]
    assert {r.source for r in found.values()} == {"module"}
    assert found["second"].origin == "module 'sst_second' (SUPERSTEP_WORKFLOWS)"


def test_discover_keeps_settings_paths_and_adds_the_demo_only_when_asked() -> None:
    paths = {"mine": "dashboard.demo.workflows.build_refund"}

    assert list(find(paths=paths)) == ["mine"]
    with_demo = find(paths=paths, demo=True)
    assert list(with_demo) == ["mine", *DEMO_WORKFLOWS]
    assert with_demo["mine"].source == "settings"
    assert with_demo["refund"].source == "demo"


# ------------------------------------------------------------------------------ refusals


def test_discover_refuses_a_name_registered_twice_naming_both_sources(site: Path) -> None:
    write_module(site, "sst_parcels", FLOWS.format(name="refund"))
    install_distribution(site, "sst-parcels", {"refund": "sst_parcels:build_refund"})

    with pytest.raises(ImproperlyConfigured) as clash:
        find(modules=("sst_parcels",))
    message = str(clash.value)
    assert "'refund' is registered twice" in message
    assert "entry point 'refund'" in message and "sst-parcels" in message
    assert "module 'sst_parcels'" in message

    with pytest.raises(ImproperlyConfigured, match="by entry point .* and by the demo app"):
        find(demo=True)


def test_discover_refuses_a_module_that_does_not_import_naming_it(site: Path) -> None:
    write_module(site, "sst_broken", "raise RuntimeError('no database at import time')\n")

    with pytest.raises(ImproperlyConfigured) as missing:
        find(modules=("sst_not_there",))
    with pytest.raises(ImproperlyConfigured) as broken:
        find(modules=("sst_broken",))

    assert "module 'sst_not_there' (SUPERSTEP_WORKFLOWS) could not be imported" in str(
        missing.value
    )
    assert "ModuleNotFoundError" in str(missing.value)
    assert "module 'sst_broken'" in str(broken.value)
    assert "RuntimeError: no database at import time" in str(broken.value)


def test_discover_refuses_an_entry_point_that_does_not_load(site: Path) -> None:
    write_module(site, "sst_parcels", FLOWS.format(name="weigh"))
    install_distribution(site, "sst-parcels", {"weigh": "sst_parcels:build_wiegh"})

    with pytest.raises(ImproperlyConfigured) as typo:
        find()

    assert "entry point 'weigh' = 'sst_parcels:build_wiegh'" in str(typo.value)
    assert "package sst-parcels" in str(typo.value) and "could not be loaded" in str(typo.value)


def test_discover_refuses_modules_that_declare_no_builders(site: Path) -> None:
    write_module(site, "sst_bare", "BUILDERS = {}\n")
    write_module(site, "sst_strings", "WORKFLOWS = {'weigh': 'sst_strings.build'}\n")
    write_module(site, "sst_blank", "WORKFLOWS = {'': print}\n")

    with pytest.raises(
        ImproperlyConfigured, match=r"'sst_bare' .*declares no workflows.*WORKFLOWS = "
    ):
        find(modules=("sst_bare",))
    with pytest.raises(ImproperlyConfigured, match="'weigh' is 'sst_strings.build', not a builder"):
        find(modules=("sst_strings",))
    with pytest.raises(ImproperlyConfigured, match="'' is not a workflow name"):
        find(modules=("sst_blank",))


def test_discover_defaults_to_the_installed_entry_points(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []

    def entry_points(*, group: str) -> list[metadata.EntryPoint]:
        asked.append(group)
        return [metadata.EntryPoint("ep-refund", "dashboard.demo.workflows:build_refund", group)]

    monkeypatch.setattr(metadata, "entry_points", entry_points)

    assert list(find()) == ["ep-refund"]
    assert asked == ["superstep.workflows"]


# ------------------------------------------------------------------------------ the catalog


def test_registry_has_the_demo_workflows_only_in_demo_mode() -> None:
    assert catalog.names() == list(DEMO_WORKFLOWS)  # the test settings are in demo mode
    with override_settings(SUPERSTEP_DEMO=False):
        assert catalog.names() == []
        with pytest.raises(catalog.UnknownWorkflowError):
            catalog.build("refund")
    assert catalog.registration("refund").source == "demo"


def test_registry_reads_the_modules_setting_and_rediscovers_when_it_changes(site: Path) -> None:
    write_module(site, "sst_flows", FLOWS.format(name="weigh"))

    with override_settings(SUPERSTEP_WORKFLOW_MODULES=["sst_flows"], SUPERSTEP_DEMO=False):
        assert catalog.names() == ["weigh"]
        assert catalog.describe("weigh").name == "weigh"
        assert catalog.input_schema("weigh")["properties"]["weight"]["type"] == "integer"
    assert "weigh" not in catalog.names()
    with pytest.raises(catalog.UnknownWorkflowError):
        catalog.describe("weigh")


def test_registry_request_types_name_the_executor_path_into_sub_workflows() -> None:
    labels = {
        (r.executor, r.request_type.__name__, r.response_type.__name__)
        for r in catalog.request_types("expense-claim")
    }
    gate = catalog.request_types("return-replace")

    # The sub-workflow wrapper's own relay handler (Any -> Any) is not a request of the run.
    assert labels == {("manager-review/manager-approval", "ManagerQuestion", "ManagerDecision")}
    assert [(r.executor, r.response_type.__name__) for r in gate] == [
        ("hitl-gate", "ApprovalDecision")
    ]
    assert catalog.request_types("refund") == []


def test_startup_stops_on_a_module_from_the_environment_that_does_not_import(
    subprocess_env: EnvBuilder,
) -> None:
    script = (
        "import django; django.setup(); from django.conf import settings; "
        "print(settings.SUPERSTEP_WORKFLOW_MODULES)"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        env=subprocess_env(
            SUPERSTEP_WORKFLOWS=" dashboard.demo.workflows_a , ", SUPERSTEP_DEMO="0"
        ),
        cwd=BASE_DIR,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    # The module does not exist: startup stops, naming it and where it was asked for.
    assert result.returncode != 0
    assert "ImproperlyConfigured: module 'dashboard.demo.workflows_a' (SUPERSTEP_WORKFLOWS)" in (
        result.stderr
    )
