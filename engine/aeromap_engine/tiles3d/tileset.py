"""tileset.json: the tree of tiles, each with a bounding box in its frame (the root's transform moves the whole
tree from the local east-north-up frame onto the globe) and the geometric error, in metres, of drawing it without
its children."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..cloud.octree import VoxelKey

VERSION = "1.1"  # glTF content without b3dm's wrapper is 1.1's; pnts stays valid in it
# A node's geometric error in sample spacings. Viewers refine a tile once its error spans more than 16 px on the
# screen (CesiumJS's default maximum screen-space error): at 8 spacings, once its points, drawn a pixel or two
# wide, would stand more than 2 px apart and show gaps.
SPACINGS_PER_ERROR = 8


@dataclass(frozen=True)
class Content:
    """A written tile content: its file (relative to the tileset) and the box of its points."""
    uri: str
    low: np.ndarray
    high: np.ndarray


def box_volume(low: np.ndarray, high: np.ndarray) -> dict[str, list[float]]:
    """An axis-aligned box as 3D Tiles writes one: its centre, then the x, y and z half-axes."""
    center, half = (np.asarray(low) + high) / 2, (np.asarray(high) - low) / 2
    return {"box": [float(v) for v in (*center, half[0], 0, 0, 0, half[1], 0, 0, 0, half[2])]}


def tileset(root: dict[str, Any], geometric_error: float, transform: list[float]) -> dict[str, Any]:
    return {"asset": {"version": VERSION, "generator": "aeromap_engine"}, "geometricError": geometric_error,
            "root": {"transform": transform, **root}}


def octree_tiles(contents: dict[VoxelKey, Content], root_spacing: float) -> dict[str, Any]:
    """The root tile of an octree whose nodes each hold a sample of their cube (cloud/octree.py): children add
    their points to their parent's (refine ADD). A node's box holds its points and all its descendants'; its
    geometric error is SPACINGS_PER_ERROR of its sample spacing (the root's halved at each level), 0 at a
    leaf."""
    children: dict[VoxelKey, list[VoxelKey]] = {key: [] for key in contents}
    for key in contents:
        depth, x, y, z = key
        if depth:
            parent = (depth - 1, x // 2, y // 2, z // 2)
            if parent not in children:
                raise ValueError(f"octree node {key} has no parent {parent}")
            children[parent].append(key)
    roots = [key for key in contents if key[0] == 0]
    if len(roots) != 1:
        raise ValueError(f"an octree has one root, these nodes have {len(roots)}")
    boxes: dict[VoxelKey, tuple[np.ndarray, np.ndarray]] = {}
    for key in sorted(contents, reverse=True):  # deepest first: every child's box is known before its parent's
        lows = [contents[key].low] + [boxes[child][0] for child in children[key]]
        highs = [contents[key].high] + [boxes[child][1] for child in children[key]]
        boxes[key] = (np.min(lows, axis=0), np.max(highs, axis=0))

    def tile(key: VoxelKey) -> dict[str, Any]:
        node = {"boundingVolume": box_volume(*boxes[key]),
                "geometricError": SPACINGS_PER_ERROR * root_spacing / 2**key[0] if children[key] else 0.0,
                "refine": "ADD", "content": {"uri": contents[key].uri}}
        if children[key]:
            node["children"] = [tile(child) for child in sorted(children[key])]
        return node

    return tile(roots[0])
