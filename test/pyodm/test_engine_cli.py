"""The engine's command line as a processing node calls it: real process, real images, exit codes."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "engine" / ".venv" / "bin" / "aeromap-engine"
IMAGES = ROOT.parent / "shared" / "datasets" / "brighton_beach" / "images"


def test_run_reports_progress_lines_and_refuses_a_single_image(tmp_path: Path) -> None:
    (tmp_path / "images").mkdir()
    shutil.copy(IMAGES / "DJI_0018.JPG", tmp_path / "images")
    options = tmp_path / "options.json"
    options.write_text(json.dumps([{"name": "end-with", "value": "dataset"}]))
    proc = subprocess.run([str(ENGINE), "run", str(tmp_path), "--options", str(options)],
                          capture_output=True, text=True)
    assert proc.returncode == 3
    lines = proc.stdout.strip().splitlines()
    assert lines[-1].startswith("[ERROR]") and "at least 2" in lines[-1]
    assert any(line.startswith("::progress:: ") for line in lines)
