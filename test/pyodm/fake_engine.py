#!/usr/bin/env python3
"""A stand-in for aeromap-engine that keeps its command-line contract (docs/design/engine-contract.md) and is quick and
predictable: each stage sleeps `fake-seconds`, the outputs are small files in ODM's layout, and options make it
fail or write a big orthophoto. Tests and benchmarks of the processing node run it with `--engine`.

Records for the tests, in the project folder: `fake/runs.txt` (one line per stage run), `fake/options.json`
(the options of the last run), `fake/pid` (the process id of the last run).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

STAGES = ["dataset", "opensfm", "odm_orthophoto"]
ALL_STAGES = ["dataset", "split", "merge", "opensfm", "openmvs", "odm_filterpoints", "odm_meshing",
              "mvs_texturing", "odm_georeferencing", "odm_dem", "odm_orthophoto", "odm_report", "odm_postprocess"]

OPTIONS = [
    {"name": "rerun-from", "type": "enum", "value": "", "domain": [""] + ALL_STAGES,
     "help": "Re-run from this stage."},
    {"name": "end-with", "type": "enum", "value": "odm_postprocess", "domain": ALL_STAGES,
     "help": "Stop after this stage."},
    {"name": "mesh-size", "type": "int", "value": "200000", "domain": "positive integer", "help": "Mesh size."},
    {"name": "mesh-octree-depth", "type": "int", "value": "11", "domain": "integer: 1 <= x <= 14",
     "help": "Octree depth."},
    {"name": "orthophoto-resolution", "type": "float", "value": "5", "domain": "float > 0.0",
     "help": "Resolution in cm/pixel."},
    {"name": "dsm", "type": "bool", "value": "false", "domain": "", "help": "Build a DSM."},
    {"name": "boundary", "type": "string", "value": "", "domain": "json", "help": "Boundary polygon."},
    {"name": "cog", "type": "bool", "value": "false", "domain": "", "help": "Cloud-optimized GeoTIFFs."},
    {"name": "fake-seconds", "type": "float", "value": "0", "domain": "positive float",
     "help": "Seconds each stage takes."},
    {"name": "fake-exit", "type": "int", "value": "0", "domain": "integer", "help": "Fail with this exit code."},
    {"name": "fake-output-mb", "type": "int", "value": "0", "domain": "positive integer",
     "help": "Size of the orthophoto in MB (0: a small file)."},
    {"name": "fake-memory-mb", "type": "int", "value": "0", "domain": "positive integer",
     "help": "Memory a worker process holds while the stages run."},
]


def progress(stage: str, percent: float) -> None:
    print("::progress:: " + json.dumps({"stage": stage, "percent": round(percent, 2)}), flush=True)


def write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def write_outputs(project: Path, opts: dict) -> None:
    size_mb = int(opts.get("fake-output-mb", 0))
    ortho = project / "odm_orthophoto" / "odm_orthophoto.tif"
    ortho.parent.mkdir(parents=True, exist_ok=True)
    with open(ortho, "wb") as out:
        if size_mb:
            block = os.urandom(2**20)
            for _ in range(size_mb):
                out.write(block)
        else:
            out.write(b"II*\x00fake orthophoto")
    images = sorted(p.name for p in (project / "images").iterdir())
    write(project / "images.json", json.dumps([{"filename": n} for n in images]).encode())
    write(project / "odm_report" / "stats.json", json.dumps({"images": len(images)}).encode())
    write(project / "odm_georeferencing" / "odm_georeferenced_model.laz", b"LASF")
    write(project / "opensfm" / "reconstruction.json", b"[]")


def run(project: Path, options_file: Path) -> int:
    pairs = json.loads(options_file.read_text())
    opts = {p["name"]: p["value"] for p in pairs}
    fake = project / "fake"
    fake.mkdir(exist_ok=True)
    (fake / "options.json").write_text(json.dumps(pairs))
    (fake / "pid").write_text(str(os.getpid()))
    (fake / "memory_limit").write_text(os.environ.get("AEROMAP_MEMORY_LIMIT", ""))
    memory_mb = int(opts.get("fake-memory-mb", 0))
    if memory_mb:
        # A worker, as the engine's pools start them: its memory counts as the run's.
        subprocess.Popen([sys.executable, "-c", f"import time; held = b'1' * {memory_mb * 2**20}; time.sleep(3600)"])
    print(f"[INFO] Fake engine on {project.name} with {len(pairs)} options", flush=True)
    print(f"[INFO] gcp_list.txt: {'present' if (project / 'gcp_list.txt').exists() else 'absent'}", flush=True)
    print(f"[INFO] geo.txt: {'present' if (project / 'geo.txt').exists() else 'absent'}", flush=True)
    print("[WARNING] a line on stderr", file=sys.stderr, flush=True)
    state = project / ".aeromap"
    state.mkdir(exist_ok=True)
    if opts.get("rerun-from"):
        for stage in STAGES[STAGES.index(opts["rerun-from"]):] if opts["rerun-from"] in STAGES else STAGES:
            (state / f"{stage}.done").unlink(missing_ok=True)
    exit_code = int(opts.get("fake-exit", 0))
    seconds = float(opts.get("fake-seconds", 0))
    end = opts.get("end-with", "odm_postprocess")
    last = len(STAGES) - 1 if end not in STAGES else STAGES.index(end)
    for i, stage in enumerate(STAGES[: last + 1]):
        if (state / f"{stage}.done").exists():
            print(f"[INFO] Stage {stage} already done, skipping", flush=True)
            continue
        print(f"[INFO] Running stage {stage}", flush=True)
        with open(fake / "runs.txt", "a") as runs:
            runs.write(stage + "\n")
        progress(stage, 100 * i / len(STAGES))
        # One quiet sleep: an engine busy in a long computation prints nothing for a while.
        time.sleep(seconds)
        progress(stage, 100 * (i + 0.9) / len(STAGES))
        if exit_code:
            print(f"[ERROR] Fake failure in {stage}", flush=True)
            return exit_code
        (state / f"{stage}.done").write_text("done")
        print(f"[INFO] Finished stage {stage}", flush=True)
    write_outputs(project, opts)
    progress(end, 100)
    print("[INFO] Fake engine finished", flush=True)
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["options"]:
        json.dump(OPTIONS, sys.stdout)
        return 0
    if argv[:1] == ["version"]:
        print("0.0.0-fake")
        return 0
    if argv[:1] == ["run"] and len(argv) == 4 and argv[2] == "--options":
        return run(Path(argv[1]), Path(argv[3]))
    print("usage: fake_engine.py options | version | run PROJECT_DIR --options FILE", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
