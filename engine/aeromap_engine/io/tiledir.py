"""Static map tiles in a folder, as ODM's `tiles` option writes them with gdal2tiles: `{z}/{x}/{y}.png`, 256 px
Web Mercator tiles with the TMS row (y counted from the south: 2^z - 1 - the XYZ row), and a
`tilemapresource.xml` describing the set (OSGeo TMS 1.0). Written under a temporary name beside the folder and
renamed into place when complete, so an earlier set never mixes with this one."""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from xml.sax.saxutils import quoteattr

from ..atomic_files import atomic_dir
from ..tiles.mercator import HALF, TILE, tile_span


class TileFolderWriter:
    def __init__(self, path: Path, title: str, mercator_bounds: tuple[float, float, float, float]) -> None:
        self._title, self._bounds = title, mercator_bounds
        self._atomic = atomic_dir(path)
        self._tmp: Path | None = None
        self._zooms: set[int] = set()

    def __enter__(self) -> "TileFolderWriter":
        self._tmp = self._atomic.__enter__()
        return self

    def add(self, z: int, x: int, y: int, png: bytes) -> None:
        """A tile at XYZ (z, x, y), stored at its TMS row."""
        assert self._tmp is not None
        folder = self._tmp / str(z) / str(x)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{2**z - 1 - y}.png").write_bytes(png)
        self._zooms.add(z)

    def _resource(self) -> str:
        xmin, ymin, xmax, ymax = self._bounds
        sets = "\n".join(f'    <TileSet href="{z}" units-per-pixel="{tile_span(z) / TILE:.14f}" order="{z}"/>'
                         for z in sorted(self._zooms))
        return (
            '<?xml version="1.0" encoding="utf-8"?>\n'
            '<TileMap version="1.0.0" tilemapservice="http://tms.osgeo.org/1.0.0">\n'
            f"  <Title>{quoteattr(self._title)[1:-1]}</Title>\n  <Abstract></Abstract>\n  <SRS>EPSG:3857</SRS>\n"
            f'  <BoundingBox minx="{xmin:.14f}" miny="{ymin:.14f}" maxx="{xmax:.14f}" maxy="{ymax:.14f}"/>\n'
            f'  <Origin x="{-HALF:.14f}" y="{-HALF:.14f}"/>\n'
            f'  <TileFormat width="{TILE}" height="{TILE}" mime-type="image/png" extension="png"/>\n'
            f'  <TileSets profile="mercator">\n{sets}\n  </TileSets>\n</TileMap>\n')

    def __exit__(self, kind: type | None, error: BaseException | None, tb: TracebackType | None) -> None:
        assert self._tmp is not None
        if kind is None:
            (self._tmp / "tilemapresource.xml").write_text(self._resource())
        self._atomic.__exit__(kind, error, tb)
