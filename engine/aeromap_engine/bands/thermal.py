"""Temperatures of radiometric thermal photographs. DJI's thermal cameras (Zenmuse H20T/H30T, Mavic 2 Enterprise
Advanced, Matrice 30T, Mavic 3T) write R-JPEGs: the JPEG a palette rendering for the eye, the sensor's counts in
APP3 segments and the measurement parameters beside them. dji-thermal-cli, a port of DJI's Thermal SDK, turns them
into degrees Celsius; it runs as a program of its own (its licence and its Python requirement stay with it), with
`--normalize`, which measures every frame with the flight's median ambient and reflected temperatures and removes
each frame's offset against its neighbours (the drift between the camera's shutter recalibrations).

A sensor's dead pixels read the same wrong value in every frame; they are found across the survey and filled from
their neighbours, so that no speck of -40 °C is blended into the orthophoto."""

from __future__ import annotations

import io
import subprocess
import sys
import tempfile
from pathlib import Path

import cv2
import numpy as np
import rasterio
from PIL import Image

from ..log import log

TOOL = (sys.executable, "-m", "dji_thermal_cli")
TOOL_NO_DATA = -273.15  # the tool's value where a frame holds no temperature
DEAD_DEVIATION = 5.0  # degrees from the median of the 3x3 neighbours that no real scene detail keeps in every frame
DEAD_SHARE = 0.9  # of the frames a pixel deviates that much in, to be called dead


def holds_raw_counts(data: bytes, make: str | None) -> bool:
    """Whether a photograph is a DJI R-JPEG: a DJI JPEG whose APP3 segments hold at least a 16-bit count for every
    pixel."""
    if not (make or "").upper().startswith("DJI") or not data.startswith(b"\xff\xd8"):
        return False
    with Image.open(io.BytesIO(data)) as image:
        raw = sum(len(payload) for marker, payload in getattr(image, "applist", []) if marker == "APP3")
        return raw >= 2 * image.width * image.height


def convert(images_dir: Path, names: list[str], out_dir: Path, jobs: int) -> dict[str, str]:
    """Write each photograph's temperatures (°C, float32, NaN where it holds none) to out_dir as <stem>.tif, dead
    pixels filled. Returns photograph -> temperature file for those the tool could read; it logs why others
    failed."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="thermal.", dir=out_dir.parent) as scratch:
        staged, written = Path(scratch, "in"), Path(scratch, "out")
        staged.mkdir()
        for name in names:
            (staged / name).symlink_to((images_dir / name).resolve())
        command = [*TOOL, "process", "--input-dir", str(staged), "--output-dir", str(written), "--output",
                   "temp_c:tiff", "--normalize", "--jobs", str(max(1, jobs)), "--quiet"]
        done = subprocess.run(command, capture_output=True, text=True)
        frames = {name: _read(written / f"{Path(name).stem}_temp_c.tiff") for name in names}
    found = {name: values for name, values in frames.items() if values is not None}
    unread = [name for name in names if name not in found]
    if unread:
        # The tool names each file it skips, with why ("[skip, no DJI thermal data found ...] path").
        said = (done.stdout + done.stderr).splitlines()
        reason = next((line.strip() for line in said if unread[0] in line),
                      said[-1].strip() if said else f"exit code {done.returncode}")
        log.warning("The thermal tool gives no temperatures for %s%s: %s", unread[0],
                    f" and {len(unread) - 1} other(s)" if len(unread) > 1 else "", reason)
    dead = dead_pixels(list(found.values()))
    if dead.any():
        log.info("Thermal sensor: %d dead pixel(s) filled from their neighbours", int(dead.sum()))
    for name, values in found.items():
        _write(out_dir / f"{Path(name).stem}.tif", fill(values, dead))
    return {name: f"{Path(name).stem}.tif" for name in found}


def dead_pixels(frames: list[np.ndarray]) -> np.ndarray:
    """The pixels that stand out from their neighbours by DEAD_DEVIATION in nearly every frame of one sensor."""
    if not frames:
        return np.zeros((0, 0), bool)
    shape = frames[0].shape
    same = [f for f in frames if f.shape == shape]
    deviating = np.zeros(shape, np.int32)
    for frame in same:
        deviating += np.abs(frame - _neighbours(frame)) > DEAD_DEVIATION
    return deviating >= DEAD_SHARE * len(same) if len(same) >= 3 else np.zeros(shape, bool)


def fill(values: np.ndarray, dead: np.ndarray) -> np.ndarray:
    if dead.shape != values.shape or not dead.any():
        return values
    filled = values.copy()
    filled[dead] = _neighbours(values)[dead]
    return filled


def _neighbours(values: np.ndarray) -> np.ndarray:
    """The median of each pixel's 3x3 neighbourhood (NaN read as the frame's median)."""
    finite = np.nan_to_num(values, nan=float(np.nanmedian(values)))
    return cv2.medianBlur(finite.astype(np.float32), 3)


def _read(path: Path) -> np.ndarray | None:
    if not path.is_file():
        return None
    with rasterio.open(path) as source:
        values = source.read(1).astype(np.float32)
    values[values <= TOOL_NO_DATA + 0.01] = np.nan
    return values


def _write(path: Path, values: np.ndarray) -> None:
    profile = {"driver": "GTiff", "width": values.shape[1], "height": values.shape[0], "count": 1,
               "dtype": "float32", "nodata": float("nan"), "compress": "deflate"}
    with rasterio.open(path, "w", **profile) as out:
        out.write(values, 1)
