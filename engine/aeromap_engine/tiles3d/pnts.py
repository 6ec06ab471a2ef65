"""3D Tiles Point Cloud (pnts) content: a 28-byte header, then the feature table (JSON, then binary) and an empty
batch table. Positions are float32 offsets from RTC_CENTER, in the frame of the tile that holds the content;
colours 8-bit RGB. Each part is padded to 8 bytes, as the format requires of the JSON and binary bodies."""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass

import numpy as np

MAGIC = b"pnts"
VERSION = 1
_HEADER = struct.Struct("<4s6I")


@dataclass(frozen=True)
class PointContent:
    positions: np.ndarray  # (N, 3) float64, RTC_CENTER added back
    rgb: np.ndarray  # (N, 3) uint8


def _padded(data: bytes, start: int, filler: bytes) -> bytes:
    """`data` padded so that it ends on an 8-byte boundary of the file, given that it begins at `start`."""
    return data + filler * (-(start + len(data)) % 8)


def encode_pnts(offsets: np.ndarray, rgb: np.ndarray, center: np.ndarray) -> bytes:
    """A pnts tile of float32 positions (offsets from `center`) and their uint8 colours."""
    positions = np.ascontiguousarray(offsets, dtype=np.float32)
    colours = np.ascontiguousarray(rgb, dtype=np.uint8)
    if positions.ndim != 2 or positions.shape[1] != 3 or colours.shape != positions.shape:
        raise ValueError(f"positions {positions.shape} and colours {colours.shape} must both be (N, 3)")
    count = len(positions)
    table = {"POINTS_LENGTH": count, "RTC_CENTER": [float(v) for v in center],
             "POSITION": {"byteOffset": 0}, "RGB": {"byteOffset": 12 * count}}
    table_json = _padded(json.dumps(table, separators=(",", ":")).encode(), _HEADER.size, b" ")
    table_binary = _padded(positions.tobytes() + colours.tobytes(), 0, b"\0")
    length = _HEADER.size + len(table_json) + len(table_binary)
    return _HEADER.pack(MAGIC, VERSION, length, len(table_json), len(table_binary), 0, 0) + table_json + table_binary


def decode_pnts(data: bytes) -> PointContent:
    """The points of a pnts tile as encode_pnts writes them (float32 POSITION, RGB, optional RTC_CENTER)."""
    magic, version, length, json_length, binary_length, _, _ = _HEADER.unpack_from(data)
    if magic != MAGIC or version != VERSION or length != len(data):
        raise ValueError(f"not a pnts tile of version {VERSION} and {len(data)} bytes")
    table = json.loads(data[_HEADER.size:_HEADER.size + json_length])
    binary = data[_HEADER.size + json_length:_HEADER.size + json_length + binary_length]
    count = table["POINTS_LENGTH"]
    positions = np.frombuffer(binary, np.float32, 3 * count, table["POSITION"]["byteOffset"]).reshape(count, 3)
    rgb = np.frombuffer(binary, np.uint8, 3 * count, table["RGB"]["byteOffset"]).reshape(count, 3)
    return PointContent(positions.astype(np.float64) + table.get("RTC_CENTER", [0.0, 0.0, 0.0]), rgb.copy())
