"""Transfer speed of the processing node as PyODM sees it: the chunked upload of 200 MB of images and the
download of a 500 MB all.zip, in parallel ranges (PyODM's default) and in one stream.

Run: engine/.venv/bin/python bench/node-transfer.py   (from the repository root; about 1 GB of temporary disk)
The node runs the test suite's fake engine, so the figures are the node's and the machine's, not the engine's.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test" / "pyodm"))
from conftest import NodeProcess  # noqa: E402  (the tests' way of starting `aeromap node`)

UPLOAD_MB = 200
IMAGE_MB = 5
ARCHIVE_MB = 500
MB = 2**20


def timed(label: str, megabytes: float, action):
    began = time.monotonic()
    result = action()
    seconds = time.monotonic() - began
    print(f"{label:<44} {megabytes:6.0f} MB in {seconds:6.2f} s = {megabytes / seconds:7.1f} MB/s", flush=True)
    return result


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="aeromap-bench-"))
    node = None
    try:
        images = work / "images"
        images.mkdir()
        paths = []
        for i in range(UPLOAD_MB // IMAGE_MB):
            path = images / f"IMG_{i:04d}.JPG"
            path.write_bytes(os.urandom(IMAGE_MB * MB))
            paths.append(str(path))
        node = NodeProcess(work / "node-data").start()
        client = node.client()
        task = timed(f"upload, chunked ({len(paths)} files, 10 in parallel)", UPLOAD_MB,
                     lambda: client.create_task(paths, {"fake-output-mb": ARCHIVE_MB}))
        began = time.monotonic()
        task.wait_for_completion(interval=0.5)
        print(f"{'processing (fake engine) and building all.zip':<44} {time.monotonic() - began:17.2f} s")
        size = (node.task_dir(task.uuid) / "all.zip").stat().st_size / MB
        for label, parallel in (("download all.zip, 16 parallel 10 MB ranges", 16),
                                ("download all.zip, one stream", 1)):
            target = work / f"download-{parallel}"
            zip_path = timed(label, size, lambda: task.download_zip(str(target), parallel_downloads=parallel))
            assert Path(zip_path).stat().st_size == size * MB
            shutil.rmtree(target)
        task.remove()
    finally:
        if node:
            node.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
