"""Console logging and the machine-readable progress lines that the processing node parses.

Everything written to stdout is console output, except lines that start with PROGRESS_PREFIX: those carry
`{"stage": name, "percent": 0..100}` for the whole run and are kept out of the console by the node.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sys
import time
from collections.abc import Iterator

PROGRESS_PREFIX = "::progress::"

log = logging.getLogger("aeromap")


def setup_logging() -> None:
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("[%(levelname)s] %(message)s"))
    log.handlers[:] = [handler]
    log.setLevel(logging.INFO)
    log.propagate = False


def emit_progress(stage: str, percent: float) -> None:
    line = json.dumps({"stage": stage, "percent": round(max(0.0, min(100.0, percent)), 2)})
    sys.stdout.write(f"{PROGRESS_PREFIX} {line}\n")
    sys.stdout.flush()


def log_count(what: str, done: int, total: int, every: int = 25) -> None:
    """A console line every `every` items and at the last: on hundreds of images, a long step shows that it
    advances, and how far."""
    if done % every == 0 or done == total:
        log.info("%s: %d of %d", what, done, total)


@contextlib.contextmanager
def timed(step: str, timings: dict[str, float]) -> Iterator[None]:
    """The time the block takes, added to `timings[step]` (a step timed in parts sums them) and logged."""
    began = time.monotonic()
    yield
    timings[step] = round(timings.get(step, 0.0) + time.monotonic() - began, 2)
    log.info("%s took %.1f s", step.capitalize(), timings[step])
