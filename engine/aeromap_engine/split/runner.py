"""Runs the submodels' later stages: here, one after another, each as an engine process of its own, or on
processing nodes through the NodeODM protocol (PyODM), as ClusterODM hands out ODM's submodels.

A submodel's folder already holds its structure from motion and the markers of the stages done, so a run resumes
at openmvs. A node receives them in seed.zip (which NodeODM unpacks into the task's folder) beside the photographs,
and its products come back in all.zip.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import zipfile
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from pyodm import Node
from pyodm.exceptions import NodeConnectionError, NodeResponseError, TaskFailedError

from ..errors import EngineError, OptionsError
from ..log import PROGRESS_PREFIX, log
from ..project import Project

Progress = Callable[[str, float], None]  # submodel name, its progress 0..1
SEED_NAME = "seed.zip"
STATUS_INTERVAL_S = 5


@dataclass(frozen=True)
class SubmodelRun:
    name: str
    project: Project  # holds the submodel's seed; its products are written here
    images: list[Path]


def node_urls(sm_cluster: str) -> list[str]:
    """The nodes sm-cluster names. A processing node that reaches public addresses only (it was not started with
    --allow-private-urls) says so through AEROMAP_PUBLIC_URLS_ONLY: a user's option must not become a way into
    the node's own network, so loopback, private and link-local addresses are refused."""
    urls = [url.strip() for url in sm_cluster.split(",") if url.strip()]
    for url in urls:
        parsed = urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise OptionsError(f"sm-cluster: {url!r} is not an http(s) URL of a processing node")
        if os.environ.get("AEROMAP_PUBLIC_URLS_ONLY") and not public(parsed.hostname):
            raise OptionsError(f"sm-cluster: {parsed.hostname} is not a public address, and this node reaches "
                               f"public addresses only (start it with --allow-private-urls to allow it)")
    return urls


def public(host: str) -> bool:
    """Whether every address the name resolves to is a public one."""
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except socket.gaierror:
        raise OptionsError(f"sm-cluster: cannot resolve {host}") from None
    return all(ipaddress.ip_address(a.split("%")[0]).is_global for a in addresses)


def run_locally(runs: list[SubmodelRun], options: list[dict[str, Any]], on_progress: Progress) -> None:
    """One engine process per submodel, one after another (each uses the threads max-concurrency allows)."""
    for run in runs:
        options_file = run.project.state_dir / "submodel-options.json"
        options_file.write_text(json.dumps(options))
        command = [sys.executable, "-m", "aeromap_engine.cli", "run", str(run.project.root), "--options",
                   str(options_file)]
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as child:
            last_error = relay(run.name, child.stdout, on_progress)
        if child.returncode != 0:
            raise EngineError(f"{run.name} failed: {last_error or f'exit code {child.returncode}'}")


def relay(name: str, lines, on_progress: Progress) -> str | None:
    """Pass a submodel's console on, prefixed with its name, and its progress to the callback; its last error."""
    last_error = None
    for line in lines:
        line = line.rstrip("\n")
        if line.startswith(PROGRESS_PREFIX):
            on_progress(name, json.loads(line[len(PROGRESS_PREFIX):])["percent"] / 100.0)
            continue
        if line.startswith("[ERROR]"):
            last_error = line[len("[ERROR]"):].strip()
        print(f"[{name}] {line}", flush=True)
    return last_error


def run_on_nodes(runs: list[SubmodelRun], options: list[dict[str, Any]], urls: list[str],
                 on_progress: Progress) -> None:
    """Every submodel sent at once, in turn to each node (a node queues what it cannot start; a ClusterODM
    spreads them over its own nodes); returns when all have come back."""
    nodes = [Node.from_url(url, timeout=60) for url in urls]
    stop = threading.Event()  # set when one fails: the others' tasks are cancelled rather than left to run

    def process(index: int) -> None:
        run, node = runs[index], nodes[index % len(nodes)]
        try:
            run_on_node(run, node, options, on_progress, stop)
        except (NodeConnectionError, NodeResponseError) as exc:
            raise EngineError(f"{run.name}: the processing node at {urls[index % len(urls)]} did not answer as "
                              f"expected: {exc}") from None

    with ThreadPoolExecutor(len(runs)) as pool:
        futures = [pool.submit(process, i) for i in range(len(runs))]
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        stop.set()  # after a failure, the others' tasks are cancelled at their next status
        failed = [f for f in futures if f in done and f.exception() is not None]
        if failed:
            raise failed[0].exception()


def run_on_node(run: SubmodelRun, node: Node, options: list[dict[str, Any]], on_progress: Progress,
                stop: threading.Event) -> None:
    with tempfile.TemporaryDirectory(prefix=".upload-", dir=run.project.root) as scratch:
        seed = Path(scratch) / SEED_NAME
        write_seed(run.project, seed)
        log.info("%s: sending %d photographs to %s:%s", run.name, len(run.images), node.host, node.port)
        task = node.create_task([str(p) for p in run.images] + [str(seed)], options=options_object(options),
                                name=run.name)

    def status(info) -> None:
        if stop.is_set():
            task.cancel()
        on_progress(run.name, info.progress / 100.0)

    try:
        task.wait_for_completion(status_callback=status, interval=STATUS_INTERVAL_S)
    except TaskFailedError:
        lines = [line for line in task.output() if line.strip()]
        reason = next((line for line in reversed(lines) if "[ERROR]" in line), lines[-1] if lines else "")
        raise EngineError(f"{run.name} failed on {node.host}:{node.port}: {reason.strip()}") from None
    with tempfile.TemporaryDirectory(prefix=".results-", dir=run.project.root) as scratch:
        task.download_assets(scratch)
        for item in Path(scratch).iterdir():
            replace_with(run.project.path(item.name), item)
    task.remove()
    log.info("%s: done on %s:%s", run.name, node.host, node.port)


def options_object(options: list[dict[str, Any]]) -> dict[str, Any]:
    return {pair["name"]: pair["value"] for pair in options}


def write_seed(project: Project, path: Path) -> None:
    """The submodel's folder but its photographs (sent apart) and scratch files."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for file in sorted(project.root.rglob("*")):
            relative = file.relative_to(project.root)
            if file.is_file() and relative.parts[0] != "images" and not relative.parts[0].startswith(".upload-"):
                archive.write(file, relative.as_posix())


def replace_with(target: Path, item: Path) -> None:
    if target.is_dir():
        shutil.rmtree(target)
    elif target.exists():
        target.unlink()
    item.rename(target)
