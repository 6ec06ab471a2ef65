"""Binary PLY point clouds (x, y, z, red, green, blue, views, classification once classified, and intensity where
a laser recorded it), the format of the intermediate clouds."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

import numpy as np

from ..atomic_files import atomic_path
from ..cloud.points import PointCloud

_TYPES = {"float": "f4", "float32": "f4", "double": "f8", "float64": "f8", "uchar": "u1", "uint8": "u1",
          "int": "i4", "int32": "i4", "uint": "u4", "uint32": "u4", "short": "i2", "ushort": "u2", "char": "i1"}
_NAMES = {"f4": "float", "f8": "double", "u1": "uchar", "u2": "ushort"}
CLASSIFICATION = ("classification", "u1")
INTENSITY = ("intensity", "<u2")
COPY_CHUNK = 16 << 20
CHUNK_POINTS = 2_000_000


def _dtype(coordinates: np.dtype, classified: bool = False, intensity: bool = False) -> np.dtype:
    c = np.dtype(coordinates).str[1:]
    return np.dtype([("x", "<" + c), ("y", "<" + c), ("z", "<" + c), ("red", "u1"), ("green", "u1"),
                     ("blue", "u1"), ("views", "u1")] + ([CLASSIFICATION] if classified else [])
                    + ([INTENSITY] if intensity else []))


def records(cloud: PointCloud, dtype: np.dtype | None = None) -> np.ndarray:
    """The cloud as PLY vertex records (float32 coordinates unless another record type is given)."""
    data = np.empty(len(cloud), dtype=dtype or _dtype(np.float32, cloud.classes is not None,
                                                      cloud.intensity is not None))
    for i, axis in enumerate("xyz"):
        data[axis] = cloud.xyz[:, i]
    for i, band in enumerate(("red", "green", "blue")):
        data[band] = cloud.rgb[:, i]
    data["views"] = cloud.views
    if "classification" in data.dtype.names:
        data["classification"] = cloud.classes
    if "intensity" in data.dtype.names:
        data["intensity"] = cloud.intensity
    return data


def _header(dtype: np.dtype, count: int, comments: tuple[str, ...]) -> bytes:
    lines = ["ply", "format binary_little_endian 1.0", *(f"comment {c}" for c in comments),
             f"element vertex {count}"]
    lines += [f"property {_NAMES[dtype[name].str[1:]]} {name}" for name in dtype.names]
    lines.append("end_header")
    return ("\n".join(lines) + "\n").encode("ascii")


def write_ply(path: Path, cloud: PointCloud, comments: tuple[str, ...] = ()) -> None:
    """Write atomically; float64 coordinates are kept (CRS coordinates need them), others become float32."""
    dtype = _dtype(np.float64 if cloud.xyz.dtype == np.float64 else np.float32, cloud.classes is not None,
                   cloud.intensity is not None)
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(_header(dtype, len(cloud), comments))
            records(cloud, dtype).tofile(f)


@contextlib.contextmanager
def ply_writer(path: Path, scratch: Path, coordinates: type = np.float32, comments: tuple[str, ...] = (),
               classified: bool = False, intensity: bool = False) -> Iterator[Callable[[PointCloud], None]]:
    """A PLY written part by part, so that a cloud larger than memory can be written: the parts go to a file in
    the scratch folder, and the PLY (whose header states the count) is assembled from it at the end,
    atomically. A classified writer takes classified parts only, one with intensity parts with intensities."""
    dtype = _dtype(coordinates, classified, intensity)
    count = 0
    with tempfile.TemporaryFile(dir=scratch) as body:
        def append(part: PointCloud) -> None:
            nonlocal count
            records(part, dtype).tofile(body)
            count += len(part)

        yield append
        body.seek(0)
        with atomic_path(path) as tmp, open(tmp, "wb") as f:
            f.write(_header(dtype, count, comments))
            shutil.copyfileobj(body, f, COPY_CHUNK)


def read_header(f: BinaryIO, path: Path) -> tuple[np.dtype, int]:
    """The vertex record type and count of a binary little-endian PLY, leaving `f` at the first record."""
    if f.readline().strip() != b"ply":
        raise ValueError(f"{path} is not a PLY file")
    fields, count, in_vertex = [], 0, False
    while True:
        line = f.readline()
        if not line:
            raise ValueError(f"{path}: PLY header has no end")
        words = line.decode("ascii", "replace").split()
        if not words or words[0] == "comment":
            continue
        if words[0] == "format" and words[1] != "binary_little_endian":
            raise ValueError(f"{path}: only binary little-endian PLY is supported")
        if words[0] == "element":
            in_vertex = words[1] == "vertex"
            if in_vertex:
                count = int(words[2])
        elif words[0] == "property" and in_vertex:
            fields.append((words[2], "<" + _TYPES[words[1]]))
        elif words[0] == "end_header":
            return np.dtype(fields), count


def from_records(data: np.ndarray) -> PointCloud:
    """The cloud of PLY vertex records; colour and views default to 0 and 1 when absent."""
    names = data.dtype.names
    coord_type = np.float64 if data.dtype["x"] == np.float64 else np.float32
    xyz = np.stack([data[a] for a in "xyz"], axis=1).astype(coord_type)
    rgb = (np.stack([data[b] for b in ("red", "green", "blue")], axis=1).astype(np.uint8)
           if "red" in names else np.zeros((len(data), 3), np.uint8))
    views = data["views"].astype(np.uint8) if "views" in names else np.ones(len(data), np.uint8)
    classes = data["classification"].astype(np.uint8) if "classification" in names else None
    intensity = data["intensity"].astype(np.uint16) if "intensity" in names else None
    return PointCloud(xyz, rgb, views, classes, intensity)


def read_ply(path: Path) -> PointCloud:
    """Read a binary little-endian PLY's vertices."""
    with open(path, "rb") as f:
        dtype, count = read_header(f, path)
        return from_records(np.fromfile(f, dtype=dtype, count=count))


def ply_chunks(path: Path, points: int = CHUNK_POINTS) -> Iterator[PointCloud]:
    """A PLY's vertices, `points` at a time, so that a cloud larger than memory can be read through."""
    with open(path, "rb") as f:
        dtype, count = read_header(f, path)
        for start in range(0, count, points):
            yield from_records(np.fromfile(f, dtype=dtype, count=min(points, count - start)))
