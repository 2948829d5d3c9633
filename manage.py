#!/usr/bin/env python3
"""Django's command-line utility for Superstep, usable on a fresh machine.

``python3 manage.py demo`` must work with whatever Python a new machine has. When this
interpreter is older than 3.12 (Django 6 needs 3.12) or cannot import Django, we run
``.ci/bootstrap`` (it creates ``.venv`` with a suitable Python and installs the project) and
re-exec this command with ``.venv/bin/python``. Otherwise it is Django's standard manage.py.

Keep this file parseable by old Pythons: it has to run far enough to bootstrap.
"""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.abspath(__file__))
VENV_PYTHON = os.path.join(ROOT, ".venv", "bin", "python")
# Set before re-exec: a second failure means bootstrapping did not help, so stop, not loop.
REEXEC_MARKER = "SUPERSTEP_MANAGE_REEXECUTED"


def django_is_usable() -> bool:
    if sys.version_info < (3, 12):  # noqa: UP036 - this file runs on any Python 3
        return False
    try:
        import django  # noqa: F401
    except ImportError:
        return False
    return True


def bootstrap_and_reexec() -> None:
    if os.environ.get(REEXEC_MARKER):
        sys.exit(
            "manage.py: .venv/bin/python still cannot import Django after .ci/bootstrap; "
            "see the output above"
        )
    sys.stderr.write("manage.py: preparing .venv (Python >= 3.12 and dependencies)...\n")
    status = subprocess.call(["bash", os.path.join(ROOT, ".ci", "bootstrap")], cwd=ROOT)
    if status != 0:
        sys.exit(f"manage.py: .ci/bootstrap failed with exit status {status}")
    os.environ[REEXEC_MARKER] = "1"
    script = os.path.join(ROOT, "manage.py")
    os.execv(VENV_PYTHON, [VENV_PYTHON, script] + sys.argv[1:])


def main() -> None:
    if not django_is_usable():
        bootstrap_and_reexec()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.config.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
