"""`aeromap-engine tile-worker`: a long-lived process that draws single tiles in styles the pyramids do not hold,
for the service, which caches what it writes, and describes layers. One JSON request per line on stdin:

    {"id": 1, "raster": "/path/dsm.tif", "elevation": true, "z": 20, "x": 1, "y": 2, "size": 512,
     "rescale": [10, 20] | null, "color_map": "jet" | null, "hillshade": 6 | null,
     "formula": "VARI" | null, "bands": "RGB" | "auto" | null, "out": "/path/tile.png"}
    {"id": 2, "kind": "metadata", "raster": "/path/odm_orthophoto.tif", "elevation": false,
     "formula": "VARI" | null, "bands": "auto" | null}
    {"id": 3, "kind": "export-check", "source": "/path/odm_georeferenced_model.laz",
     "product": "orthophoto" | "elevation" | "pointcloud", "epsg": 27700 | null, "proj": "+proj=..." | null,
     "color_map": ..., "formula": ..., "bands": ...}

and one JSON answer per line on stdout: {"id": 1, "written": true}, {"id": 1, "written": false} where the raster
has nothing there, {"id": 2, "metadata": {...}} (see metadata.py),
{"id": 3, "export": {"epsg": 32615 | null}} (see export/check.py), or {"id": 1, "error": "...", "input": true}
for a request that cannot be answered (an unknown colour map, a formula the raster's bands cannot feed) and
{"id": 1, "error": "..."} for any other failure. Rasters stay open between requests (reopened when replaced)."""

from __future__ import annotations

import json
import os
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import rasterio

from ..atomic_files import atomic_path
from ..errors import InputError
from ..export.check import check_color_map, check_export
from .metadata import raster_metadata
from .pyramid import encode_png
from .render import TileStyle, check_georeferenced, elevation_range, render_tile


@dataclass
class _Open:
    stamp: tuple[int, float]
    src: rasterio.io.DatasetReader
    default_range: tuple[float, float] | None


class Rasters:
    """Open rasters by path, the least recently used closed beyond `limit`."""

    def __init__(self, limit: int = 16) -> None:
        self._open: OrderedDict[str, _Open] = OrderedDict()
        self._limit = limit

    def get(self, path: str, elevation: bool) -> _Open:
        info = os.stat(path)
        stamp = (info.st_ino, info.st_mtime)
        entry = self._open.pop(path, None)
        if entry is None or entry.stamp != stamp:
            if entry is not None:
                entry.src.close()
            src = rasterio.open(path)
            check_georeferenced(src)
            entry = _Open(stamp, src, elevation_range(src) if elevation else None)
        self._open[path] = entry
        while len(self._open) > self._limit:
            self._open.popitem(last=False)[1].src.close()
        return entry


def _style(request: dict[str, Any], elevation: bool) -> TileStyle:
    rescale = request.get("rescale")
    color_map = request.get("color_map")
    check_color_map(color_map)
    hillshade = request.get("hillshade")
    formula, bands = request.get("formula"), request.get("bands")
    if elevation and formula is not None:
        raise InputError("formula and bands apply to orthophotos, not to elevation models")
    return TileStyle(tuple(rescale) if rescale else None, color_map, None if hillshade is None else float(hillshade),
                     formula, bands)


def handle(rasters: Rasters, request: dict[str, Any]) -> dict[str, Any]:
    if request.get("kind") == "export-check":
        pointcloud = request["product"] == "pointcloud"
        style = TileStyle() if pointcloud else _style(request, request["product"] == "elevation")
        return {"export": check_export(Path(request["source"]), pointcloud, request.get("epsg"), request.get("proj"),
                                       style)}
    elevation = bool(request["elevation"])
    entry = rasters.get(request["raster"], elevation)
    style = _style(request, elevation)
    if request.get("kind") == "metadata":
        return {"metadata": raster_metadata(entry.src, elevation, style.formula, style.bands)}
    rgba = render_tile(entry.src, elevation, int(request["z"]), int(request["x"]), int(request["y"]),
                       int(request["size"]), style, entry.default_range)
    if rgba is None:
        return {"written": False}
    with atomic_path(Path(request["out"])) as partial:
        partial.write_bytes(encode_png(rgba))
    return {"written": True}


def serve(stdin: IO[str], stdout: IO[str]) -> None:
    rasters = Rasters()
    for line in stdin:
        if not line.strip():
            continue
        request: dict[str, Any] = {}
        try:
            request = json.loads(line)
            answer = handle(rasters, request)
        except InputError as exc:
            answer = {"error": str(exc), "input": True}
        except KeyError as exc:
            answer = {"error": f"the request lacks {exc.args[0]}"}
        except Exception as exc:  # noqa: BLE001 - one bad tile must not end the worker that serves every other
            answer = {"error": str(exc) or type(exc).__name__}
        stdout.write(json.dumps({"id": request.get("id"), **answer}) + "\n")
        stdout.flush()
