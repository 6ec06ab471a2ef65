"""Georeferenced point cloud outputs: LAS/LAZ (with the CRS as a WKT VLR), PLY and CSV, in CRS coordinates."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import laspy
import numpy as np
import pyproj

from ..atomic_files import atomic_path
from ..cloud.points import PointCloud
from ..cloud.tiled import TiledCloud, Tiling, tile_sorted

LAS_SCALE = 0.001  # 1 mm: finer than any photogrammetric point's precision
# LAZ is read and written on one thread: lazrs's parallel backend runs a thread pool that does not survive a fork,
# so a forked worker (the merge's) of a process that had used it would wait forever, and the time it saves is
# small beside a stage's.
LAZ_BACKEND = laspy.LazBackend.Lazrs
CHUNK = 1_000_000  # points read at a time




def open_las(path: Path) -> laspy.LasReader:
    """A reader of a LAS/LAZ file, on the LAZ backend every reader and writer here uses."""
    return laspy.open(path, laz_backend=LAZ_BACKEND)


def read_las(path: Path, classified: bool = False, intensity: bool = False) -> Iterator[PointCloud]:
    """The points of a LAS/LAZ file a chunk at a time: CRS coordinates (float64), 8-bit colours (black where the
    file has none), the view counts from user_data, with `classified` their classes and with `intensity` their
    intensities."""
    with open_las(path) as reader:
        has_colour = "red" in reader.header.point_format.dimension_names
        for chunk in reader.chunk_iterator(CHUNK):
            xyz = np.c_[chunk.x, chunk.y, chunk.z].astype(np.float64)
            if has_colour:
                # Colours are stored scaled to 16 bits (v * 257); the high byte gives the 8-bit value back.
                rgb = (np.c_[chunk.red, chunk.green, chunk.blue] >> 8).astype(np.uint8)
            else:
                rgb = np.zeros((len(xyz), 3), np.uint8)
            classes = np.asarray(chunk.classification, np.uint8) if classified else None
            intensities = np.asarray(chunk.intensity, np.uint16) if intensity else None
            yield PointCloud(xyz, rgb, np.asarray(chunk.user_data, np.uint8), classes, intensities)


def tiled_from_las(path: Path, offset: tuple[float, float], target: Path, scratch: Path) -> TiledCloud:
    """A LAS/LAZ file in the CRS as a tiled cloud at `target` in the world frame (the CRS less `offset`), with
    its classes and intensities (a cloud made elsewhere, a laser's, keeps what it recorded)."""
    shift = np.array([offset[0], offset[1], 0.0])

    def parts() -> Iterator[PointCloud]:
        for part in read_las(path, classified=True, intensity=True):
            yield PointCloud((part.xyz - shift).astype(np.float32), part.rgb, part.views, part.classes,
                             part.intensity)

    return tile_sorted(parts(), Tiling.fitting(parts()), target, scratch)


def write_las(path: Path, parts: Iterable[PointCloud], low: np.ndarray, crs: str | None, compress: bool) -> None:
    """LAS 1.4, point format 7 (RGB), so the CRS is stored as WKT; colours scaled to 16 bits as the format
    defines; the number of views that agree on each point goes into user_data, as ODM does. Written part by
    part (CRS coordinates); `low` is the lowest corner of the whole cloud, the header's offset."""
    header = laspy.LasHeader(point_format=7, version="1.4")
    header.scales = np.full(3, LAS_SCALE)
    header.offsets = np.floor(low)
    if crs is not None:
        header.add_crs(pyproj.CRS.from_user_input(crs))
    with atomic_path(path) as tmp, laspy.open(str(tmp), mode="w", header=header, do_compress=compress,
                                                         laz_backend=LAZ_BACKEND) as writer:
        for part in parts:
            records = laspy.ScaleAwarePointRecord.zeros(len(part), header=header)
            records.x, records.y, records.z = part.xyz[:, 0], part.xyz[:, 1], part.xyz[:, 2]
            rgb16 = part.rgb.astype(np.uint16) * 257
            records.red, records.green, records.blue = rgb16[:, 0], rgb16[:, 1], rgb16[:, 2]
            records.user_data = part.views
            if part.classes is not None:
                records.classification = part.classes
            if part.intensity is not None:
                records.intensity = part.intensity
            writer.write_points(records)


def write_csv(path: Path, parts: Iterable[PointCloud], decimals: int = 3) -> None:
    """X, Y, Z with `decimals` decimals (more than 3 for degrees), then the colours."""
    coordinate = f"%.{decimals}f"
    with atomic_path(path) as tmp:
        with open(tmp, "w") as f:
            f.write("X,Y,Z,Red,Green,Blue\n")
            for part in parts:
                np.savetxt(f, np.c_[part.xyz, part.rgb], fmt=[coordinate] * 3 + ["%d"] * 3,
                           delimiter=",")
