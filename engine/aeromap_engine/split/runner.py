"""Runs the submodels' later stages: here, one after another, each as an engine process of its own, or on
processing nodes through the NodeODM protocol (PyODM), as ClusterODM hands out ODM's submodels: each to a node
its photographs fit (the node's image limit) with the least to do, and again elsewhere when a node fails it or is
lost.

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
MAX_ATTEMPTS = 3  # nodes a submodel is tried on before the survey fails
# A node that does not answer its task's status this many times, LOST_RETRY_S x 1, 2, ... seconds apart (24 s in
# all), is taken as lost and its submodel sent elsewhere.
LOST_RETRIES = 3
LOST_RETRY_S = 4


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
    """Every submodel sent at once, each to the node that can take its photographs and has least to do (a node
    queues what it cannot start; a ClusterODM spreads them over its own nodes); a submodel whose node fails it or
    is lost runs again on another, up to MAX_ATTEMPTS nodes. Returns when all have come back."""
    placement = Placement([node_slot(url) for url in urls])
    stop = threading.Event()  # set when one has failed for good: the others' tasks are cancelled, not left to run

    def process(run: SubmodelRun) -> None:
        failures: list[str] = []
        tried: set[str] = set()
        while not stop.is_set():
            slot = placement.take(len(run.images), tried)
            if slot is None:
                raise EngineError(f"{run.name}: " + ("; ".join(failures) if failures else
                                                      f"no processing node can take its {len(run.images)} photographs "
                                                      f"({placement.describe()})"))
            tried.add(slot.url)
            try:
                run_on_node(run, slot.node, options, on_progress, stop)
                return
            except NodeConnectionError as exc:
                placement.lose(slot)
                failures.append(f"{slot.url} was lost ({exc})")
            except (NodeResponseError, SubmodelFailed) as exc:
                failures.append(f"{slot.url} failed it: {exc}")
            finally:
                placement.release(slot)
            if len(failures) >= MAX_ATTEMPTS or stop.is_set():
                raise EngineError(f"{run.name}: " + "; ".join(failures))
            log.warning("%s: %s; running it again on another node", run.name, failures[-1])

    with ThreadPoolExecutor(len(runs)) as pool:
        futures = [pool.submit(process, run) for run in runs]
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        stop.set()  # after a failure, the others' tasks are cancelled at their next status
        failed = [f for f in futures if f in done and f.exception() is not None]
        if failed:
            raise failed[0].exception()


class SubmodelFailed(EngineError):
    """A node ran a submodel and answered that it failed."""


@dataclass
class NodeSlot:
    url: str
    node: Node
    max_images: int | None  # None: no limit
    load: int  # tasks queued or running there: its own queue when asked, and the submodels sent since
    lost: bool = False


def node_slot(url: str) -> NodeSlot:
    """The node at url with what its info says of its capacity; lost already where it does not answer."""
    node = Node.from_url(url, timeout=60)
    try:
        info = node.info()
    except (NodeConnectionError, NodeResponseError) as exc:
        log.warning("The processing node at %s does not answer (%s): no submodel is sent there", url, exc)
        return NodeSlot(url, node, None, 0, lost=True)
    return NodeSlot(url, node, info.max_images or None, int(info.task_queue_count or 0))


class Placement:
    """Which node takes a submodel: one whose image limit its photographs fit, not yet tried for it, not lost,
    with the least load (the first listed among equals); shared by the submodels' threads."""

    def __init__(self, slots: list[NodeSlot]) -> None:
        self.slots = slots
        self.lock = threading.Lock()

    def take(self, images: int, tried: set[str]) -> NodeSlot | None:
        with self.lock:
            fitting = [s for s in self.slots if not s.lost and s.url not in tried
                       and (s.max_images is None or images <= s.max_images)]
            if not fitting:
                return None
            slot = min(fitting, key=lambda s: s.load)
            slot.load += 1
            return slot

    def release(self, slot: NodeSlot) -> None:
        with self.lock:
            slot.load -= 1

    def lose(self, slot: NodeSlot) -> None:
        with self.lock:
            slot.lost = True

    def describe(self) -> str:
        def capacity(slot: NodeSlot) -> str:
            return "lost" if slot.lost else f"at most {slot.max_images} images" if slot.max_images else "no limit"
        return ", ".join(f"{slot.url}: {capacity(slot)}" for slot in self.slots)


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
        task.wait_for_completion(status_callback=status, interval=STATUS_INTERVAL_S, max_retries=LOST_RETRIES,
                                 retry_timeout=LOST_RETRY_S)
    except TaskFailedError:
        lines = [line for line in task.output() if line.strip()]
        reason = next((line for line in reversed(lines) if "[ERROR]" in line), lines[-1] if lines else "")
        raise SubmodelFailed(reason.strip() or "no reason given") from None
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
