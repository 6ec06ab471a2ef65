"""Point clouds ordered by square tiles of the ground, so that the stages after the dense cloud work one tile (and
its margin) at a time and their memory does not grow with the survey.

A tiled cloud is a plain float32 PLY, which any tool reads, whose points are grouped by tile, with an index beside
it (NAME.tiles.json: the tiling and each tile's first point and count). Tiles are read with np.fromfile at their
offset, so only what is asked for is in memory (a memory map would count every page it touched in the stage's
resident memory until the end).
"""

from __future__ import annotations

import contextlib
import json
import math
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..atomic_files import atomic_path
from ..dem.grid import PointIndex
from ..io.ply import from_records, ply_writer, read_header, records
from .points import PointCloud

TILE_POINTS = 2_000_000  # points a tile holds, about, where the cloud is densest
DENSITY_CELL = 10.0  # m: the cells the cloud's density is measured on
DENSE_PERCENTILE = 95  # the density a tile is sized for: of the cells that hold points, this percentile's
MIN_SIDE = 20.0  # m: tiles narrower than this would be mostly margin for the stages that read them with one
CACHED_TILES = 4  # tiles kept read and indexed for windows that fall in them
INDEX_BLOCKS = 16  # a tile's index buckets its points by squares of 1/16 of its side


Bounds = tuple[float, float, float, float]


@dataclass(frozen=True)
class Tiling:
    """Square tiles of `side` metres from (x0, y0), keyed by (column, row)."""

    x0: float
    y0: float
    side: float

    def keys(self, xy: np.ndarray) -> np.ndarray:
        """(N, 2) int64 column and row of each point's tile."""
        return np.floor((xy[:, :2] - [self.x0, self.y0]) / self.side).astype(np.int64)

    def bounds(self, col: int, row: int) -> Bounds:
        x, y = self.x0 + col * self.side, self.y0 + row * self.side
        return (x, y, x + self.side, y + self.side)

    @staticmethod
    def fitting(chunks: Iterable[PointCloud]) -> "Tiling":
        """The tiling whose tiles hold about TILE_POINTS where the cloud is dense (one pass over it)."""
        keys, counts, low = [], [], np.full(2, np.inf)
        for chunk in chunks:
            if not len(chunk):
                continue
            xy = chunk.xyz[:, :2].astype(np.float64)
            low = np.minimum(low, xy.min(axis=0))
            cell = np.floor(xy / DENSITY_CELL).astype(np.int64)
            unique, count = np.unique((cell[:, 0] << 32) + cell[:, 1], return_counts=True)
            keys.append(unique)
            counts.append(count)
        if not keys:
            return Tiling(0.0, 0.0, MIN_SIDE)
        unique, inverse = np.unique(np.concatenate(keys), return_inverse=True)
        per_cell = np.bincount(inverse, weights=np.concatenate(counts), minlength=len(unique))
        density = float(np.percentile(per_cell, DENSE_PERCENTILE)) / DENSITY_CELL**2
        side = max(MIN_SIDE, math.ceil(math.sqrt(TILE_POINTS / density) / DENSITY_CELL) * DENSITY_CELL)
        return Tiling(float(low[0]), float(low[1]), float(side))


@dataclass(frozen=True)
class Tile:
    col: int
    row: int
    start: int  # index of its first point in the PLY
    count: int


def index_path(path: Path) -> Path:
    return path.with_name(path.stem + ".tiles.json")


@contextlib.contextmanager
def tiled_writer(path: Path, tiling: Tiling, scratch: Path,
                 classified: bool = False, intensity: bool = False) -> Iterator[Callable[[int, int, PointCloud], None]]:
    """A tiled cloud written tile by tile: write(col, row, points), each tile's points in one or more consecutive
    calls (classified points only, in a classified cloud). The index is written after the PLY, so a reader never
    finds an index of another cloud."""
    index_path(path).unlink(missing_ok=True)
    tiles: list[Tile] = []
    total = 0
    low, high = np.full(3, np.inf), np.full(3, -np.inf)
    with ply_writer(path, scratch, classified=classified, intensity=intensity) as append:
        def write(col: int, row: int, part: PointCloud) -> None:
            nonlocal total, low, high
            if not len(part):
                return
            low = np.minimum(low, part.xyz.min(axis=0))
            high = np.maximum(high, part.xyz.max(axis=0))
            if tiles and (tiles[-1].col, tiles[-1].row) == (col, row):
                tiles[-1] = Tile(col, row, tiles[-1].start, tiles[-1].count + len(part))
            else:
                tiles.append(Tile(col, row, total, len(part)))
            append(part)
            total += len(part)

        yield write
    with atomic_path(index_path(path)) as tmp:
        tmp.write_text(json.dumps({"x0": tiling.x0, "y0": tiling.y0, "side": tiling.side, "count": total,
                                   "low": low.tolist() if total else None,
                                   "high": high.tolist() if total else None,
                                   "tiles": [[t.col, t.row, t.start, t.count] for t in tiles]}))


class TiledCloud:
    """A tiled cloud on disk, read tile by tile or by bounds."""

    def __init__(self, path: Path, tiling: Tiling, tiles: list[Tile], box: tuple[np.ndarray, np.ndarray] | None,
                 dtype: np.dtype, body: int) -> None:
        self.path, self.tiling, self.tiles = path, tiling, tiles
        self.box = box  # the lowest and highest x, y, z of the points; None when there are none
        self._dtype, self._body = dtype, body
        self._by_key = {(t.col, t.row): t for t in tiles}
        self._cache: dict[tuple[int, int], tuple[PointCloud, PointIndex]] = {}

    @staticmethod
    def open(path: Path) -> "TiledCloud":
        index = json.loads(index_path(path).read_text())
        with open(path, "rb") as f:
            dtype, count = read_header(f, path)
            body = f.tell()
        if count != index["count"]:
            raise ValueError(f"{path}: its tile index counts {index['count']} points, the file holds {count}")
        tiles = [Tile(*entry) for entry in index["tiles"]]
        box = (np.array(index["low"]), np.array(index["high"])) if index["low"] else None
        return TiledCloud(path, Tiling(index["x0"], index["y0"], index["side"]), tiles, box, dtype, body)

    def __len__(self) -> int:
        return sum(t.count for t in self.tiles)

    @property
    def classified(self) -> bool:
        return "classification" in (self._dtype.names or ())

    @property
    def extent(self) -> Bounds:
        """(xmin, ymin, xmax, ymax) of the points."""
        if self.box is None:
            raise ValueError(f"{self.path} holds no points")
        low, high = self.box
        return (float(low[0]), float(low[1]), float(high[0]), float(high[1]))

    def bounds(self, tile: Tile) -> Bounds:
        return self.tiling.bounds(tile.col, tile.row)

    def read(self, tile: Tile, rows: np.ndarray | None = None) -> PointCloud:
        """A tile's points (or those of them at sorted indices `rows`)."""
        with open(self.path, "rb") as f:
            data = np.fromfile(f, dtype=self._dtype, count=tile.count,
                               offset=self._body + tile.start * self._dtype.itemsize)
        return from_records(data if rows is None else data[rows])

    def parts(self, offset: tuple[float, float] | None = None) -> Iterator[PointCloud]:
        """Each tile's points in turn; with an offset, moved by it into float64 CRS coordinates."""
        for tile in self.tiles:
            part = self.read(tile)
            if offset is not None:
                part = PointCloud(part.xyz.astype(np.float64) + [offset[0], offset[1], 0.0], part.rgb, part.views,
                                  part.classes, part.intensity)
            yield part

    def xyz_by_tile(self) -> Iterator[np.ndarray]:
        """The coordinates of each tile's points in turn."""
        return (part.xyz for part in self.parts())

    def near(self, bounds: Bounds) -> PointCloud:
        """The points inside bounds (xmin, ymin, xmax, ymax), the west and south edges included."""
        xmin, ymin, xmax, ymax = bounds
        (c0, r0), (c1, r1) = self.tiling.keys(np.array([[xmin, ymin], [xmax, ymax]]))
        parts = []
        for col in range(c0, c1 + 1):
            for row in range(r0, r1 + 1):
                tile = self._by_key.get((col, row))
                if tile is not None:
                    points, index = self._indexed(tile)
                    parts.append(points.subset(index.indices_near(bounds)))
        return PointCloud.concatenate(parts)

    def _indexed(self, tile: Tile) -> tuple[PointCloud, PointIndex]:
        """A tile's points and their index, kept for the next calls: windows asked for in order (rows of raster
        tiles) fall in the same few cloud tiles, which are then read and indexed once."""
        key = (tile.col, tile.row)
        if key not in self._cache:
            if len(self._cache) >= CACHED_TILES:
                self._cache.pop(next(iter(self._cache)))
            points = self.read(tile)
            self._cache[key] = (points, PointIndex(points.xyz, self.tiling.side / INDEX_BLOCKS))
        return self._cache[key]

    def with_margin(self, tile: Tile, margin: float) -> tuple[PointCloud, np.ndarray]:
        """The points of a tile and of `margin` metres around it, and which of them are the tile's own."""
        xmin, ymin, xmax, ymax = self.bounds(tile)
        points = self.near((xmin - margin, ymin - margin, xmax + margin, ymax + margin))
        x, y = points.xyz[:, 0], points.xyz[:, 1]
        return points, (x >= xmin) & (x < xmax) & (y >= ymin) & (y < ymax)

    def sample(self, points: int, seed: int = 0) -> np.ndarray:
        """The coordinates (N, 3) of about `points` points drawn uniformly from the whole cloud."""
        rng = np.random.default_rng(seed)
        share = min(1.0, points / max(len(self), 1))
        parts = [self.read(t, np.sort(rng.choice(t.count, min(t.count, max(1, round(share * t.count))),
                                                 replace=False))).xyz for t in self.tiles]
        return np.concatenate(parts) if parts else np.zeros((0, 3), np.float32)


def tile_sorted(chunks: Iterable[PointCloud], tiling: Tiling, path: Path, scratch: Path) -> TiledCloud:
    """A cloud given in any order, written as a tiled cloud: each chunk's points are appended to their tile's file
    in the scratch folder, then the tiles are joined in order."""
    with tempfile.TemporaryDirectory(prefix="tiles.", dir=scratch) as tmp:
        files: dict[tuple[int, int], Path] = {}
        dtype = None
        for chunk in chunks:
            data = records(chunk)
            dtype = data.dtype
            keys = tiling.keys(chunk.xyz)
            order = np.lexsort((keys[:, 1], keys[:, 0]))
            sorted_keys = keys[order]
            starts = np.flatnonzero(np.r_[True, np.any(sorted_keys[1:] != sorted_keys[:-1], axis=1)])
            for begin, end in zip(starts, np.r_[starts[1:], len(order)]):
                key = (int(sorted_keys[begin, 0]), int(sorted_keys[begin, 1]))
                file = files.setdefault(key, Path(tmp) / f"{key[0]}_{key[1]}.bin")
                with open(file, "ab") as f:
                    data[order[begin:end]].tofile(f)
        names = dtype.names if dtype is not None else ()
        with tiled_writer(path, tiling, scratch, "classification" in names, "intensity" in names) as write:
            for key in sorted(files):
                write(*key, from_records(np.fromfile(files[key], dtype=dtype)))
    return TiledCloud.open(path)
