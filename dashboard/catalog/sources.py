"""Where a deployment's workflows come from, found once when Django starts.

Four sources, each a name -> builder (a callable taking ``checkpoint_storage=`` and returning a
built ``Workflow``):

* **entry points** of installed packages, group ``superstep.workflows``: the entry point's name
  is the workflow's name and its value the builder, ``module:function``. In the user's own
  ``pyproject.toml``::

      [project.entry-points."superstep.workflows"]
      invoice-approval = "acme_flows.invoices:build_invoice_approval"

* **modules** named by the ``SUPERSTEP_WORKFLOWS`` environment variable (comma-separated, read
  into ``settings.SUPERSTEP_WORKFLOW_MODULES``). Each module declares its workflows in a
  module-level dict, the one convention to remember::

      WORKFLOWS = {"invoice-approval": build_invoice_approval}

* **settings**: ``settings.SUPERSTEP_WORKFLOWS``, name -> dotted path of a builder, for a
  deployment that keeps a settings module of its own;
* **demo**: the demo app's workflows (``DEMO_WORKFLOWS`` below, builders in
  ``dashboard.demo.workflows``), only in demo mode (``settings.SUPERSTEP_DEMO``).

**Sensitive fields.** Any of these may also name a mapping, ``{"builder": build, "sensitive":
["$.input.customer.email", ...]}``: the paths (``dashboard.catalog.sensitive``) say where a
run's data holds values that are masked for people who may not see them.

**Versions side by side.** Any of these may name a list of builders instead of one, oldest
first: the last builds the current version, which new runs start on; the others stay so that
runs started on them finish on them (``WORKFLOWS = {"invoice-approval": [build_v1, build_v2]}``,
an entry point or a settings path naming such a list). A version is the graph's signature
hash, so a builder whose graph did not change is the same version.

Everything is imported here, at startup, so a module that does not import, a builder that is
not callable or one name claimed by two sources stops the process with ``ImproperlyConfigured``
naming the culprits, instead of a 500 on the first page that needs the workflow.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata

from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from dashboard.catalog.sensitive import SensitivePath, SensitivePathError, parse_path
from workflows import Workflow

__all__ = [
    "DEMO_WORKFLOWS",
    "ENTRY_POINT_GROUP",
    "MODULE_ATTRIBUTE",
    "Builder",
    "Registration",
    "discover",
]

ENTRY_POINT_GROUP = "superstep.workflows"
MODULE_ATTRIBUTE = "WORKFLOWS"
# The run row's workflow_name column.
MAX_NAME_LENGTH = 200

type Builder = Callable[..., Workflow]

# name -> dotted path of a builder, registered in demo mode. Plain strings: reading them imports
# nothing, whether or not the demo app is installed (the demo app sits far above the catalog).
DEMO_WORKFLOWS: dict[str, str] = {
    "refund": "dashboard.demo.workflows.build_refund",
    "squares": "dashboard.demo.workflows.build_squares",
    "fan-out-fan-in": "dashboard.demo.workflows.build_fan_out_fan_in",
    "fail-at-step": "dashboard.demo.workflows.build_fail_at_step",
    "return-replace": "dashboard.demo.workflows.build_return_replace",
    "expense-claim": "dashboard.demo.workflows.build_expense_claim",
    "research-report": "dashboard.demo.agents.build_research_report",
    "support-refund": "dashboard.demo.agents.build_support_refund",
    "handoff-triage": "dashboard.demo.agents.build_handoff_triage",
    "product-brief": "dashboard.demo.agents.build_product_brief",
    "order-pipeline": "dashboard.demo.functional.build_order_pipeline",
    "card-dispute": "dashboard.demo.disputes.CARD_DISPUTE",
}


@dataclass(frozen=True, slots=True)
class Registration:
    """One registered workflow: its builder and where it was declared.

    ``source`` is the kind ("entry point", "module", "settings", "demo"); ``origin`` says
    exactly where, in words an error message or ``manage.py workflows`` can show.
    """

    name: str
    builder: Builder
    source: str
    origin: str
    # Builders of earlier versions, oldest first, kept for the runs that started on them.
    older: tuple[Builder, ...] = ()
    # Where the run's data holds sensitive values (``dashboard.catalog.sensitive``).
    sensitive: tuple[SensitivePath, ...] = ()

    @property
    def builders(self) -> tuple[Builder, ...]:
        """Every version's builder, oldest first; the current one last."""
        return (*self.older, self.builder)

    @property
    def target(self) -> str:
        """The builder as ``module:function``."""
        module = getattr(self.builder, "__module__", "?")
        return f"{module}:{getattr(self.builder, '__qualname__', repr(self.builder))}"


def discover(
    *,
    modules: Sequence[str],
    settings_paths: Mapping[str, str | list[str]],
    demo_paths: Mapping[str, str | list[str]] | None,
    entry_points: Iterable[metadata.EntryPoint] | None = None,
) -> dict[str, Registration]:
    """Every registered workflow by name: entry points, modules, settings, then the demo.

    ``entry_points`` defaults to the installed packages' ``superstep.workflows`` group;
    ``demo_paths`` is None outside demo mode.

    Raises:
        ImproperlyConfigured: a module or entry point that cannot be imported, a declaration
            that is not a builder, or a name registered twice (naming both sources).
    """
    found: dict[str, Registration] = {}
    if entry_points is None:
        entry_points = metadata.entry_points(group=ENTRY_POINT_GROUP)
    batches = [
        _from_entry_points(entry_points),
        # A module named twice is one source, not a clash with itself.
        *(_from_module(module) for module in dict.fromkeys(modules)),
        _from_paths(settings_paths, source="settings", origin="settings.SUPERSTEP_WORKFLOWS"),
    ]
    if demo_paths is not None:
        batches.append(_from_paths(demo_paths, source="demo", origin="the demo app"))
    for batch in batches:
        for registration in batch:
            _add(found, registration)
    return found


def _add(found: dict[str, Registration], registration: Registration) -> None:
    name = registration.name
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME_LENGTH:
        raise ImproperlyConfigured(
            f"{registration.origin}: {name!r} is not a workflow name "
            f"(non-empty text, at most {MAX_NAME_LENGTH} characters)"
        )
    for builder in registration.builders:
        if not callable(builder):
            raise ImproperlyConfigured(
                f"{registration.origin}: workflow {name!r} is {builder!r}, "
                "not a builder function (one taking checkpoint_storage= and returning a "
                "Workflow) or a list of them, oldest version first"
            )
    previous = found.get(name)
    if previous is not None:
        raise ImproperlyConfigured(
            f"workflow {name!r} is registered twice: by {previous.origin} and by "
            f"{registration.origin}; rename one of them or drop one source"
        )
    found[name] = registration


def _from_entry_points(entry_points: Iterable[metadata.EntryPoint]) -> list[Registration]:
    registrations: list[Registration] = []
    # Installation order is an accident of the file system; names give a stable listing.
    for entry_point in sorted(entry_points, key=lambda ep: ep.name):
        distribution = entry_point.dist.name if entry_point.dist is not None else "unknown"
        origin = (
            f"entry point {entry_point.name!r} = {entry_point.value!r} "
            f"(group {ENTRY_POINT_GROUP!r}, package {distribution})"
        )
        try:
            builder = entry_point.load()
        except Exception as exc:
            raise ImproperlyConfigured(f"{origin} could not be loaded: {_reason(exc)}") from exc
        registrations.append(_registration(entry_point.name, builder, "entry point", origin))
    return registrations


def _from_module(module_name: str) -> list[Registration]:
    origin = f"module {module_name!r} (SUPERSTEP_WORKFLOWS)"
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise ImproperlyConfigured(f"{origin} could not be imported: {_reason(exc)}") from exc
    declared = getattr(module, MODULE_ATTRIBUTE, None)
    if not isinstance(declared, Mapping):
        raise ImproperlyConfigured(
            f"{origin} declares no workflows: give it a module-level dict "
            f'{MODULE_ATTRIBUTE} = {{"name": builder_function}}'
        )
    return [_registration(name, builder, "module", origin) for name, builder in declared.items()]


def _from_paths(
    paths: Mapping[str, str | list[str]], *, source: str, origin: str
) -> list[Registration]:
    registrations: list[Registration] = []
    for name, path in paths.items():
        where = f"{origin} ({name!r}: {path!r})"
        try:
            builders = [import_string(p) for p in ([path] if isinstance(path, str) else path)]
        except Exception as exc:
            raise ImproperlyConfigured(f"{where} could not be imported: {_reason(exc)}") from exc
        declared: object = builders[0] if isinstance(path, str) else builders
        registrations.append(_registration(name, declared, source, where))
    return registrations


def _registration(name: str, declared: object, source: str, origin: str) -> Registration:
    """One name's builder, or its list of builders (oldest version first), or a mapping of
    ``builder`` (either of those) and ``sensitive`` (JSON paths)."""
    sensitive: tuple[SensitivePath, ...] = ()
    if isinstance(declared, Mapping):
        unknown = sorted(set(declared) - {"builder", "sensitive"})
        if unknown or "builder" not in declared:
            raise ImproperlyConfigured(
                f"{origin}: workflow {name!r} is declared as a mapping, which takes 'builder' "
                f"(required) and 'sensitive' (a list of paths)"
                + (f"; unknown keys: {', '.join(map(repr, unknown))}" if unknown else "")
            )
        sensitive = _sensitive_paths(name, declared.get("sensitive", ()), origin)
        declared = declared["builder"]
    if isinstance(declared, (list, tuple)):
        if not declared:
            raise ImproperlyConfigured(f"{origin}: workflow {name!r} lists no builders")
        *older, current = declared
        return Registration(name, current, source, origin, tuple(older), sensitive)
    return Registration(name, declared, source, origin, (), sensitive)  # type: ignore[arg-type]  # _add checks it


def _sensitive_paths(name: str, paths: object, origin: str) -> tuple[SensitivePath, ...]:
    if isinstance(paths, str) or not isinstance(paths, (list, tuple)):
        raise ImproperlyConfigured(
            f"{origin}: workflow {name!r}: 'sensitive' must be a list of paths, not {paths!r}"
        )
    try:
        return tuple(parse_path(path) for path in paths)
    except SensitivePathError as exc:
        raise ImproperlyConfigured(f"{origin}: workflow {name!r}: {exc}") from exc


def _reason(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"
