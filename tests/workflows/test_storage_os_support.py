"""storage/os_support.py: where the OS lacks a call the file storage makes, the storage still
keeps its whole contract, and the engine still imports.

An absence is made real in a child process: a preamble takes the calls away (``import fcntl``
refused, ``os.fdatasync``, ``os.pwrite`` and ``dir_fd`` deleted, a directory refused to
``os.open``) before ``workflows`` is imported, so os_support chooses at import what it would
choose on such an OS. The child then runs the storage contract as test_storage_file.py binds it.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from workflows.storage import os_support

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = "tests/workflows/test_storage_file.py::TestFileStorageContract"
CHOICES = ("LOCKING", "DATA_SYNC", "FILE_SYNC", "DIR_SYNC", "POSITIONED_WRITE", "OPEN_IN_FOLDER")

# Windows: no fcntl, no fdatasync, no pwrite, no dir_fd, no directory opens; msvcrt.locking,
# whose contract (a lock per open file; LK_NBLCK fails at once with an OSError) flock plays.
WINDOWS = """
import errno, os, subprocess, sys, types  # subprocess first: it would take msvcrt for Windows
import fcntl as _flock

sys.modules["fcntl"] = None


def _locking(fd, mode, nbytes):
    if mode == _msvcrt.LK_UNLCK:
        return _flock.flock(fd, _flock.LOCK_UN)
    try:
        _flock.flock(fd, _flock.LOCK_EX | _flock.LOCK_NB)
    except BlockingIOError:
        raise PermissionError(errno.EACCES, "Permission denied") from None


_msvcrt = types.ModuleType("msvcrt")
_msvcrt.LK_UNLCK, _msvcrt.LK_NBLCK, _msvcrt.locking = 0, 2, _locking
del os.fdatasync, os.pwrite, os.O_DIRECTORY
os.supports_dir_fd = set()
_open = os.open


def _no_directories(path, flags, mode=0o777, *, dir_fd=None):
    if sys._getframe(1).f_globals.get("__name__", "").startswith("workflows."):
        if dir_fd is not None or os.path.isdir(path):
            raise PermissionError(errno.EACCES, "Permission denied", path)
    return _open(path, flags, mode, dir_fd=dir_fd)


os.open = _no_directories
sys.modules["msvcrt"] = _msvcrt
import workflows.storage.os_support  # chooses now
del sys.modules["msvcrt"]  # and fools nothing else
"""

# macOS: no fdatasync; fcntl has F_FULLFSYNC (counted here, and done as an fsync).
MACOS = """
import os, sys, types
import fcntl as _real

_fake = types.ModuleType("fcntl")
_fake.__dict__.update({k: v for k, v in vars(_real).items() if not k.startswith("__")})
_fake.F_FULLFSYNC, _fake.full_fsyncs = 51, 0


def _fcntl(fd, cmd, arg=0):
    if cmd != _fake.F_FULLFSYNC:
        return _real.fcntl(fd, cmd, arg)
    os.fsync(fd)
    _fake.full_fsyncs += 1
    return 0


_fake.fcntl = _fcntl
sys.modules["fcntl"] = _fake
del os.fdatasync
"""

# No lock call Python reaches (as under WASI): neither fcntl nor msvcrt; no fdatasync either.
NO_LOCK_CALL = """
import os, sys

sys.modules["fcntl"] = None
sys.modules["msvcrt"] = None
del os.fdatasync
"""

SCENARIOS = {
    "windows": (
        WINDOWS,
        {
            "LOCKING": "msvcrt",
            "DATA_SYNC": "fsync",
            "FILE_SYNC": "fsync",
            "DIR_SYNC": "none",
            "POSITIONED_WRITE": "lseek+write",
            "OPEN_IN_FOLDER": "path",
        },
    ),
    "macos": (
        MACOS,
        {
            "LOCKING": "flock",
            "DATA_SYNC": "F_FULLFSYNC",
            "FILE_SYNC": "F_FULLFSYNC",
            "DIR_SYNC": "F_FULLFSYNC",
            "POSITIONED_WRITE": "pwrite",
            "OPEN_IN_FOLDER": "dir_fd",
        },
    ),
    "no lock call": (
        NO_LOCK_CALL,
        {
            "LOCKING": "lock file",
            "DATA_SYNC": "fsync",
            "FILE_SYNC": "fsync",
            "DIR_SYNC": "fsync",
            "POSITIONED_WRITE": "pwrite",
            "OPEN_IN_FOLDER": "dir_fd",
        },
    ),
}

RUN_CONTRACT = f"""
import json, sys, pytest
from workflows.storage import os_support

print("chosen", json.dumps({{name: getattr(os_support, name) for name in {CHOICES!r}}}))
code = pytest.main(
    ["-q", "-p", "no:cacheprovider", "-p", "no:django",
     "-W", "ignore::pytest.PytestConfigWarning", {CONTRACT!r}]
)
print("full_fsyncs", getattr(sys.modules["fcntl"], "full_fsyncs", 0))
sys.exit(code)
"""

HOLD_LOCK = """
import sys
from pathlib import Path
from workflows.storage import os_support

folder = os_support.Folder(Path(sys.argv[1]))
folder.lock()
print("held", flush=True)
sys.stdin.read()
folder.unlock()
"""

TRY_LOCK = """
import sys
from pathlib import Path
from workflows.storage import os_support

os_support.LOCK_WAIT = float(sys.argv[2])
folder = os_support.Folder(Path(sys.argv[1]))
try:
    folder.lock()
except TimeoutError as exc:
    print("timeout:", exc)
else:
    folder.unlock()
    print("locked")
"""


def child(code: str, *args: str, stdin: int | None = None) -> subprocess.Popen[str]:
    """``python -c code args...`` in the repository, its output and errors in one pipe."""
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


@pytest.fixture(scope="module")
def contract_runs() -> Iterator[dict[str, subprocess.Popen[str]]]:
    """The contract, in one child per scenario, all started at once (each takes seconds)."""
    runs = {name: child(preamble + RUN_CONTRACT) for name, (preamble, _) in SCENARIOS.items()}
    yield runs
    for run in runs.values():
        if run.poll() is None:
            run.kill()
            run.communicate()


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_file_storage_keeps_its_contract_where_the_os_lacks_a_call(
    scenario: str, contract_runs: dict[str, subprocess.Popen[str]]
) -> None:
    out, _ = contract_runs[scenario].communicate(timeout=240)
    assert contract_runs[scenario].returncode == 0, out
    chosen = json.loads(out.split("chosen ", 1)[1].splitlines()[0])
    assert chosen == SCENARIOS[scenario][1]
    full_fsyncs = int(out.rsplit("full_fsyncs ", 1)[1].split()[0])
    assert (full_fsyncs > 0) == (scenario == "macos"), out


def test_the_engine_imports_without_fcntl() -> None:
    code = (
        "import sys; sys.modules['fcntl'] = None; "
        "import workflows; from workflows.storage import os_support; "
        "print(os_support.LOCKING)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "lock file"  # no msvcrt either, off Windows


# Every module of the engine, imported where Python has none of its POSIX-only modules.
IMPORT_EVERY_MODULE = """
import sys

for name in ("fcntl", "termios", "tty", "pty", "pwd", "grp", "resource", "syslog"):
    sys.modules[name] = None
import pkgutil, workflows

names = [m.name for m in pkgutil.walk_packages(workflows.__path__, "workflows.")]
for name in names:
    __import__(name)
print(len(names))
"""


def test_every_engine_module_imports_without_posix_only_modules() -> None:
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_EVERY_MODULE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) > 50  # every module, not a package that stopped early


@pytest.mark.parametrize("scenario", ["windows", "no lock call"])
def test_a_polled_folder_lock_excludes_another_process_until_released(
    scenario: str, tmp_path: Path
) -> None:
    preamble = SCENARIOS[scenario][0]
    holder = child(preamble + HOLD_LOCK, str(tmp_path), stdin=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        waiter = child(preamble + TRY_LOCK, str(tmp_path), "0.3")
        out, _ = waiter.communicate(timeout=60)
        assert out.startswith("timeout: could not lock in 0.3 s"), out
    finally:
        holder.communicate("", timeout=60)  # its stdin closes: it lets go
    taker = child(preamble + TRY_LOCK, str(tmp_path), "5")
    out, _ = taker.communicate(timeout=60)
    assert out == "locked\n", out


def test_a_lock_file_left_by_a_dead_process_ends_the_wait_saying_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os_support, "LOCKING", "lock file")
    monkeypatch.setattr(os_support, "LOCK_WAIT", 0.05)
    folder = os_support.Folder(tmp_path)
    left = tmp_path / os_support.LOCK_FILE
    left.write_text("4242\n")
    with pytest.raises(TimeoutError) as caught:
        folder.lock()
    assert str(left) in str(caught.value)
    assert "held by process 4242" in str(caught.value)
    assert "delete the file" in str(caught.value)
    left.unlink()
    folder.lock()
    assert left.read_text() == f"{os.getpid()}\n"
    folder.unlock()
    assert not left.exists()
    folder.close()


def test_a_full_fsync_the_file_system_refuses_becomes_an_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[tuple[int, int]] = []
    synced: list[int] = []

    def refuse(fd: int, cmd: int) -> int:
        asked.append((fd, cmd))
        raise OSError(errno.ENOTSUP, "Operation not supported")

    monkeypatch.setattr(os_support, "_fcntl", SimpleNamespace(fcntl=refuse))
    monkeypatch.setattr(os_support, "_F_FULLFSYNC", 51)
    monkeypatch.setattr(os, "fsync", synced.append)
    fd = os.open(tmp_path / "f", os.O_WRONLY | os.O_CREAT)
    try:
        os_support._full_fsync(fd)
    finally:
        os.close(fd)
    assert asked == [(fd, 51)]
    assert synced == [fd]


@pytest.mark.skipif(sys.platform != "linux", reason="the benchmarked calls are Linux's")
def test_linux_keeps_the_calls_the_storage_was_benchmarked_with() -> None:
    assert {name: getattr(os_support, name) for name in CHOICES} == {
        "LOCKING": "flock",
        "DATA_SYNC": "fdatasync",
        "FILE_SYNC": "fsync",
        "DIR_SYNC": "fsync",
        "POSITIONED_WRITE": "pwrite",
        "OPEN_IN_FOLDER": "dir_fd",
    }
    assert os_support.pwrite is os.pwrite
    assert os_support.O_BINARY == 0
