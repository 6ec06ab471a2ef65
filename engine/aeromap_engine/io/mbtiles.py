"""MBTiles 1.3 writing: a SQLite file with `metadata(name, value)` and `tiles(zoom_level, tile_column,
tile_row, tile_data)`, rows in the TMS order (tile_row = 2^z - 1 - y), written under a temporary name and renamed
into place when complete."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from types import TracebackType

from ..atomic_files import atomic_path


class MBTilesWriter:
    def __init__(self, path: Path, metadata: dict[str, str]) -> None:
        self._path = path
        self._metadata = dict(metadata)
        self._atomic = atomic_path(path)
        self._db: sqlite3.Connection | None = None

    def __enter__(self) -> "MBTilesWriter":
        tmp = self._atomic.__enter__()
        tmp.unlink(missing_ok=True)
        self._db = sqlite3.connect(tmp)
        self._db.executescript(
            "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
            "CREATE TABLE metadata (name TEXT, value TEXT);"
            "CREATE TABLE tiles (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, tile_data BLOB);"
        )
        return self

    def add(self, z: int, x: int, y: int, data: bytes) -> None:
        assert self._db is not None
        self._db.execute("INSERT INTO tiles VALUES (?, ?, ?, ?)", (z, x, 2**z - 1 - y, data))

    def set(self, name: str, value: str) -> None:
        self._metadata[name] = value

    def __exit__(self, kind: type | None, error: BaseException | None, tb: TracebackType | None) -> None:
        assert self._db is not None
        if kind is None:
            self._db.executemany("INSERT INTO metadata VALUES (?, ?)", sorted(self._metadata.items()))
            self._db.execute("CREATE UNIQUE INDEX tile_index ON tiles (zoom_level, tile_column, tile_row)")
            self._db.commit()
        self._db.close()
        self._atomic.__exit__(kind, error, tb)
