"""ODM's products of Brighton Beach for tests: the point cloud ODM made (model.laz, beside the photographs) thinned,
and an orthophoto (mean colour per cell, alpha where cells are empty) and a DSM (highest point per cell) gridded
from it, in ODM's layout and CRS (WGS 84 / UTM 15N). Run as a script: `python brighton_products.py OUT_DIR
[RESOLUTION_M] [KEEP_EVERY]`."""

from __future__ import annotations

import sys
from pathlib import Path

import laspy
import numpy as np
import rasterio
from rasterio.transform import from_origin

from aeromap_engine.dem.grid import Grid, bin_points

BRIGHTON_LAZ = Path(__file__).resolve().parents[3] / "shared" / "datasets" / "brighton_beach" / "model.laz"
ORTHOPHOTO = "odm_orthophoto/odm_orthophoto.tif"
DSM = "odm_dem/dsm.tif"
LAZ = "odm_georeferencing/odm_georeferenced_model.laz"


def write_products(out: Path, resolution: float = 0.25, keep_every: int = 20) -> dict[str, Path]:
    las = laspy.read(BRIGHTON_LAZ)
    crs = las.header.parse_crs()
    xyz = np.column_stack([las.x, las.y, las.z])
    rgb = np.column_stack([las.red, las.green, las.blue]).astype(np.float64)
    grid = Grid.covering((xyz[:, 0].min(), xyz[:, 1].min(), xyz[:, 0].max(), xyz[:, 1].max()), resolution)
    transform = from_origin(grid.x0, grid.y1, resolution, resolution)
    colour = np.stack([bin_points(grid, np.column_stack([xyz[:, :2], rgb[:, band]]), "mean") for band in range(3)])
    alpha = np.isfinite(colour[0])
    rgba = np.concatenate([np.nan_to_num(colour).round().clip(0, 255), alpha[None] * 255.0]).astype(np.uint8)
    paths = {name: out / rel for name, rel in (("orthophoto", ORTHOPHOTO), ("dsm", DSM), ("laz", LAZ))}
    for path in paths.values():
        path.parent.mkdir(parents=True, exist_ok=True)
    profile = {"driver": "GTiff", "width": grid.width, "height": grid.height, "crs": crs, "transform": transform}
    with rasterio.open(paths["orthophoto"], "w", count=4, dtype="uint8", photometric="RGB", alpha="YES",
                       **profile) as dst:
        dst.write(rgba)
    dsm = bin_points(grid, xyz, "max")
    with rasterio.open(paths["dsm"], "w", count=1, dtype="float32", nodata=-9999.0, **profile) as dst:
        dst.write(np.where(np.isfinite(dsm), dsm, -9999.0)[None].astype(np.float32))
    thin = las.points[np.arange(0, len(las.points), keep_every)]
    header = laspy.LasHeader(point_format=las.header.point_format, version=las.header.version)
    header.scales, header.offsets = las.header.scales, las.header.offsets
    header.vlrs = [v for v in las.header.vlrs if not isinstance(v, laspy.vlrs.known.LasZipVlr)]
    with laspy.open(paths["laz"], mode="w", header=header, do_compress=True) as writer:
        writer.write_points(thin)
    return paths


if __name__ == "__main__":
    out, *rest = sys.argv[1:]
    write_products(Path(out), *[convert(value) for convert, value in zip((float, int), rest)])
