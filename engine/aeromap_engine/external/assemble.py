"""Staged products (files named as their assets) checked, and written as a task's results: the rasters as they
are, the point cloud as LAZ and as COPC for the 3D view, the model as it is, and a stats.json with the extent."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import laspy
import numpy as np
import rasterio
import rasterio.errors
from rasterio.warp import transform_bounds

from ..atomic_files import atomic_path, write_json
from ..io.copc import write_copc
from ..io.pointcloud import CHUNK, LAZ_BACKEND, open_las, tiled_from_las
from ..log import log
from .products import KINDS, RasterHeader, model_problem, point_cloud_problem, raster_problem

COPC_RESULT = "odm_georeferencing/odm_georeferenced_model.copc.laz"
STATS_RESULT = "odm_report/stats.json"


def staged(folder: Path) -> dict[str, Path]:
    """The products present in the staging folder, by kind."""
    return {kind: folder / spec.asset for kind, spec in KINDS.items() if (folder / spec.asset).is_file()}


def problems(folder: Path) -> list[str]:
    """What is wrong with the staged products, one line each; empty when they can be imported."""
    products = staged(folder)
    if not products:
        return ["nothing was uploaded: send an orthophoto, DSM, DTM, point cloud or textured model"]
    return [problem for kind, path in products.items() if (problem := _problem(kind, path))]


def _problem(kind: str, path: Path) -> str | None:
    if kind == "pointcloud":
        if _head(path) != b"LASF":
            return point_cloud_problem(_head(path), 0)
        try:
            with open_las(path) as reader:
                return point_cloud_problem(b"LASF", reader.header.point_count)
        except (laspy.errors.LaspyException, ValueError, OSError) as exc:
            return f"the point cloud cannot be read: {exc}"
    if kind == "texturedmodel":
        return model_problem(_head(path))
    try:
        with rasterio.open(path) as src:
            return raster_problem(kind, RasterHeader(src.count, src.crs is not None, src.width, src.height))
    except rasterio.errors.RasterioIOError:
        return f"the {kind} is not a GeoTIFF that can be read"


def _head(path: Path) -> bytes:
    with path.open("rb") as file:
        return file.read(4)


def assemble(folder: Path, results: Path) -> None:
    """Writes the staged products (checked by problems()) under `results` at ODM's paths."""
    figures: dict[str, dict] = {}
    for kind, path in staged(folder).items():
        target = results / KINDS[kind].result
        target.parent.mkdir(parents=True, exist_ok=True)
        if kind == "pointcloud":
            figures["point_cloud_statistics"] = _point_cloud(path, target, results / COPC_RESULT)
        else:
            shutil.copyfile(path, target)
        if kind in ("orthophoto", "dsm", "dtm"):
            section = "orthophoto" if kind == "orthophoto" else "dem"
            bounds = _wgs84_bounds(target)
            if bounds is not None and "bounds_wgs84" not in figures.get(section, {}):
                figures[section] = {"bounds_wgs84": bounds}
    write_json(results / STATS_RESULT, figures)


def _wgs84_bounds(raster: Path) -> list[float] | None:
    with rasterio.open(raster) as src:
        if src.crs is None:
            return None
        return [round(v, 8) for v in transform_bounds(src.crs, "EPSG:4326", *src.bounds, densify_pts=21)]


def _point_cloud(source: Path, laz: Path, copc: Path) -> dict:
    """The cloud as LAZ (copied when it is one, compressed when LAS) and as COPC; its figures as the report's."""
    with open_las(source) as reader:
        header = reader.header
        crs = header.parse_crs()
        compressed = header.are_points_compressed
        points = int(header.point_count)
        offset = (float(np.floor(header.mins[0])), float(np.floor(header.mins[1])))
        if not compressed:
            with atomic_path(laz) as partial, laspy.open(str(partial), mode="w", header=header, do_compress=True,
                                                         laz_backend=LAZ_BACKEND) as writer:
                for chunk in reader.chunk_iterator(CHUNK):
                    writer.write_points(chunk)
    if compressed:
        shutil.copyfile(source, laz)
    with tempfile.TemporaryDirectory(prefix="external.", dir=laz.parent) as scratch:
        cloud = tiled_from_las(laz, offset, Path(scratch) / "tiled.ply", Path(scratch))
        nodes = write_copc(copc, cloud, offset, crs.to_wkt() if crs is not None else None, Path(scratch))
    log.info("Imported point cloud: %d points, %d COPC nodes%s", points, nodes, "" if crs else " (no CRS)")
    return {"dense": True, "stats": {"statistic": [{"count": points}]}}
