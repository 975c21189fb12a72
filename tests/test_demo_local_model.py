"""The README's first command, for real: `worker fix` on examples/calc with no endpoint
configured, so the bundled model on llama.cpp, in the real sandbox, to a verified fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.local_model, pytest.mark.docker]

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "calc"


def test_readme_demo_fixes_calc_with_the_bundled_model(tmp_path, sandbox_image):
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "WORKER_MODEL")
    }
    before = {p: p.read_bytes() for p in EXAMPLE.rglob("*") if p.is_file()}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "worker.cli.main",
            "fix",
            "--repo",
            str(EXAMPLE),
            "--goal",
            "make the tests pass",
            "--out",
            str(tmp_path / "out"),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert report["status"] == "fixed" and report["verification"]["passed"]
    assert report["model"] == "local" and report["tool_mode"] == "json_schema"
    assert report["files_changed"] == ["calc.py"]
    assert "using the bundled local model" in proc.stderr
    # The example itself is untouched: the fix is only in fix.patch.
    assert {p: p.read_bytes() for p in EXAMPLE.rglob("*") if p.is_file()} == before
