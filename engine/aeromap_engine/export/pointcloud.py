"""The point cloud exported as WebODM exports it: LAS or LAZ (every attribute of every point kept, the CRS written
as the header's WKT VLR), PLY or CSV (coordinates and colours), each in the cloud's own CRS or another. Read
and written chunk by chunk, so a cloud larger than memory can be exported."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import laspy
import numpy as np
import pyproj

from ..atomic_files import atomic_path
from ..cloud.points import PointCloud
from ..errors import InputError
from ..geo import transform
from ..io.ply import ply_writer
from ..io.pointcloud import LAZ_BACKEND, open_las, write_csv
from .target import coordinate_step, decimals

POINT_FORMATS = ("laz", "las", "ply", "csv")
CHUNK_POINTS = 1_000_000


@dataclass(frozen=True)
class Reprojection:
    """From the cloud's CRS to the export's; an identity when they are the same (or the cloud has none)."""
    source: pyproj.CRS | None
    target: pyproj.CRS | None

    @property
    def moves(self) -> bool:
        return self.source is not None and self.target is not None and self.source != self.target

    def apply(self, xyz: np.ndarray) -> np.ndarray:
        return transform(self.source, self.target, xyz) if self.moves else np.asarray(xyz, dtype=np.float64)


def colours_8bit(rgb: np.ndarray, sixteen_bits: bool) -> np.ndarray:
    """LAS colours as 8 bits: 16-bit ones (as the format defines them) divided down; ODM's 8-bit values kept."""
    return (rgb >> 8 if sixteen_bits else np.minimum(rgb, 255)).astype(np.uint8)


def target_offset(header: laspy.LasHeader, move: Reprojection) -> np.ndarray:
    """An offset for the exported coordinates: the centre of the cloud's box in the new CRS, so that scaled
    32-bit integers reach every point."""
    low, high = header.mins, header.maxs
    corners = np.array([[x, y, z] for x in (low[0], high[0]) for y in (low[1], high[1]) for z in (low[2], high[2])])
    moved = move.apply(corners)
    if not np.isfinite(moved).all():
        raise InputError(f"The point cloud cannot be placed in {move.target.name}: it lies outside the area that "
                         "CRS covers")
    return np.floor(moved.mean(axis=0))


def _las_header(source: laspy.LasHeader, move: Reprojection) -> laspy.LasHeader:
    header = laspy.LasHeader(point_format=source.point_format, version="1.4")
    header.offsets = target_offset(source, move)
    step = coordinate_step(move.target) if move.target is not None else None
    header.scales = np.array([step, step, 0.001]) if step else source.scales
    crs = move.target or move.source
    if crs is not None:
        header.add_crs(crs, keep_compatibility=False)
    return header


def _write_las(reader: laspy.LasReader, output: Path, move: Reprojection, compress: bool) -> None:
    header = _las_header(reader.header, move)
    names = [n for n in reader.header.point_format.dimension_names if n not in ("X", "Y", "Z")]
    with atomic_path(output) as partial, laspy.open(str(partial), mode="w", header=header, do_compress=compress,
                                                    laz_backend=LAZ_BACKEND) as writer:
        for chunk in reader.chunk_iterator(CHUNK_POINTS):
            xyz = move.apply(np.column_stack([chunk.x, chunk.y, chunk.z]))
            records = laspy.ScaleAwarePointRecord.zeros(len(chunk), header=header)
            for name in names:
                records[name] = chunk[name]
            records.x, records.y, records.z = xyz[:, 0], xyz[:, 1], xyz[:, 2]
            writer.write_points(records)


def _clouds(reader: laspy.LasReader, move: Reprojection) -> Iterator[PointCloud]:
    has_rgb = "red" in reader.header.point_format.dimension_names
    sixteen_bits: bool | None = None
    for chunk in reader.chunk_iterator(CHUNK_POINTS):
        xyz = move.apply(np.column_stack([chunk.x, chunk.y, chunk.z]))
        if has_rgb:
            rgb = np.column_stack([chunk.red, chunk.green, chunk.blue])
            if sixteen_bits is None:
                # ODM writes 8-bit values into the 16-bit fields; the format (and Aeromap) scale them to 16 bits.
                # One chunk tells which: a 16-bit cloud of only values below 256 would be black throughout.
                sixteen_bits = bool(rgb.max(initial=0) > 255)
            rgb = colours_8bit(rgb, sixteen_bits)
        else:
            rgb = np.zeros((len(xyz), 3), np.uint8)
        yield PointCloud(xyz, rgb, np.asarray(chunk.user_data, dtype=np.uint8))


def export_pointcloud(source: Path, output: Path, fmt: str, crs: pyproj.CRS | None) -> None:
    if fmt not in POINT_FORMATS:
        raise InputError(f"Unsupported format: {fmt} (point clouds export as {', '.join(POINT_FORMATS)})")
    with open_las(source) as reader:
        own = reader.header.parse_crs()
        if crs is not None and own is None:
            raise InputError("Cannot use epsg on non-georeferenced dataset: the point cloud has no CRS")
        move = Reprojection(own, crs or own)
        if fmt in ("las", "laz"):
            _write_las(reader, output, move, compress=fmt == "laz")
        elif fmt == "ply":
            with ply_writer(output, output.parent, np.float64) as append:
                for part in _clouds(reader, move):
                    append(part)
        else:
            write_csv(output, _clouds(reader, move), decimals(move.target) if move.target is not None else 3)
