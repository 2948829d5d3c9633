"""``dashboard.renderers`` needs no Django: its modules load in a fresh interpreter where the
``dashboard`` package itself (whose ``__init__`` loads the Celery app, and so Django) is an
empty namespace, and leave no Django module and no other dashboard package behind.

The import-layer test reads the imports statically; this one runs them, so an import Django
makes on the renderers' behalf (a library that pulls it in) is caught too."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

PROBE = """
import importlib, json, pkgutil, sys, types
package = types.ModuleType("dashboard")
package.__path__ = [sys.argv[1] + "/dashboard"]
sys.modules["dashboard"] = package
import dashboard.renderers as renderers
names = [m.name for m in pkgutil.iter_modules(renderers.__path__)]
for name in names:
    importlib.import_module(f"dashboard.renderers.{name}")
print(json.dumps({
    "renderers": names,
    "django": sorted(m for m in sys.modules if m.split(".")[0] == "django"),
    "dashboard": sorted(
        m for m in sys.modules
        if m.split(".")[0] == "dashboard" and m != "dashboard"
        and not m.startswith("dashboard.renderers")
    ),
}))
"""


def test_the_renderers_import_no_django_and_no_other_dashboard_package() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(ROOT)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    loaded = json.loads(done.stdout)
    assert {"graph_layout", "jsondiff", "gantt"} <= set(loaded["renderers"])
    assert loaded["django"] == []
    assert loaded["dashboard"] == []
