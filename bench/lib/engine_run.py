"""One engine run for the benchmarks: a project folder of links to the photographs, the options, the engine as a
separate process (so its memory is its own), its wall time and odm_report/stats.json."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path


def run_engine(project: Path, images: Path, options: list[dict], rerun_from: str | None = None) -> tuple[float, dict]:
    """Wall seconds and stats.json of a whole run from scratch (or from the stage `rerun_from`); the engine's
    console is kept in the project's engine.log. Exits with the engine's output if it fails."""
    (project / "images").mkdir(parents=True, exist_ok=True)
    for image in sorted(images.iterdir()):
        link = project / "images" / image.name
        if not link.exists():
            link.symlink_to(image)
    options_file = project / "options.json"
    rerun = {"name": "rerun-from", "value": rerun_from} if rerun_from else {"name": "rerun-all", "value": True}
    options_file.write_text(json.dumps(options + [rerun]))
    began = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "aeromap_engine.cli", "run", str(project), "--options",
                             str(options_file)], capture_output=True, text=True)
    wall = time.monotonic() - began
    (project / "engine.log").write_text(result.stdout + result.stderr)
    if result.returncode != 0:
        print(result.stdout[-3000:], result.stderr[-3000:])
        raise SystemExit(f"{project.name}: the engine failed with exit code {result.returncode}")
    return wall, json.loads((project / "odm_report" / "stats.json").read_text())
