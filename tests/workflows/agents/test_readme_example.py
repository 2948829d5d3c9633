"""The README's agent example runs as printed, and prints what MAF prints for the same file.

It is the first thing a MAF user copies, so it is run as they would: the block is written to a
file in an empty folder and run with this interpreter, once as it stands and once with its two
workflow imports changed back to MAF's.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[3] / "README.md"
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
TO_MAF = {
    "from workflows import": "from agent_framework import",
    "from workflows.orchestrations import": "from agent_framework_orchestrations import",
}


def agent_example() -> str:
    blocks = BLOCK.findall(README.read_text())
    [block] = [b for b in blocks if "approval_mode=" in b and "asyncio.run(main())" in b]
    return block


def run(source: str, folder: Path) -> str:
    folder.mkdir()
    (folder / "example.py").write_text(source)
    done = subprocess.run(
        [sys.executable, "example.py"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_readme_agent_example_pauses_then_finishes_from_its_latest_checkpoint(
    tmp_path: Path,
) -> None:
    source = agent_example()
    ours = run(source, tmp_path / "ours")
    lines = ours.splitlines()
    assert lines[0] == "waiting for a person to approve refund"
    assert lines[1].startswith("Based on refund: refunded ")
    assert (tmp_path / "ours" / "checkpoints").is_dir()
    for ours_line, maf_line in TO_MAF.items():
        assert ours_line in source
        source = source.replace(ours_line, maf_line)
    assert run(source, tmp_path / "maf") == ours
