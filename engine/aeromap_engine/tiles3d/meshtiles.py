"""A textured mesh cut into the cells of a quadtree over its ground plan, and a coarser copy for each level above
the leaves: what a 3D Tiles viewer streams, so that a model of any size opens. Each tile carries one texture,
holding only the texels its faces use (the atlas regions of its charts, repacked), at half the texel density of
the level below it. Pure: meshes in, meshes out; the decimation itself is mesh/simplify's."""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from ..mesh.model import TexturedMesh
from ..texture.atlas import GUTTER, pack, regions, texel_position


MIN_SCALE = 1 / 256  # of the texel density: below it, a tile's charts (each with its gutter) cannot fit


@dataclass(frozen=True)
class Grid:
    """The quadtree's square: its lower-left corner (x, y) in the mesh's frame and its side."""
    low: np.ndarray
    side: float

    @classmethod
    def around(cls, vertices: np.ndarray) -> "Grid":
        low, high = vertices[:, :2].min(axis=0), vertices[:, :2].max(axis=0)
        return cls(low, float(max(high - low)) or 1.0)

    def cells(self, points: np.ndarray, level: int) -> np.ndarray:
        """(N, 2) column, row of the cells of `level` (2^level a side) holding (N, 2+) points."""
        count = 2 ** level
        return np.clip(np.floor((points[:, :2] - self.low) / self.side * count), 0, count - 1).astype(np.int64)


def leaf_level(faces: int, leaf_faces: int, max_level: int) -> int:
    """The level whose cells hold about `leaf_faces` faces each, were the faces spread evenly."""
    return min(max_level, max(0, math.ceil(math.log(max(faces / leaf_faces, 1.0), 4))))


def face_centres(mesh: TexturedMesh) -> np.ndarray:
    return mesh.vertices[mesh.faces].mean(axis=1)


def submesh(mesh: TexturedMesh, keep: np.ndarray) -> TexturedMesh:
    """The faces `keep` selects (boolean mask), with only the vertices and texture coordinates they use."""
    vertices, faces = np.unique(mesh.faces[keep], return_inverse=True)
    uvs, face_uvs = np.unique(mesh.face_uvs[keep], return_inverse=True)
    return TexturedMesh(mesh.vertices[vertices], faces.reshape(-1, 3).astype(np.int32), mesh.uvs[uvs],
                        face_uvs.reshape(-1, 3).astype(np.int32), mesh.face_material[keep], mesh.atlases)


def merged(meshes: list[TexturedMesh]) -> TexturedMesh:
    """One mesh of several, vertices at the same place joined (the tiles of a level share their borders' vertices,
    which the cut copied), each mesh's atlases kept."""
    vertex_base = np.cumsum([0] + [len(m.vertices) for m in meshes])
    uv_base = np.cumsum([0] + [len(m.uvs) for m in meshes])
    atlas_base = np.cumsum([0] + [len(m.atlases) for m in meshes])
    vertices, joined = np.unique(np.concatenate([m.vertices for m in meshes]), axis=0, return_inverse=True)
    faces = joined.ravel()[np.concatenate([m.faces + b for m, b in zip(meshes, vertex_base)])]
    return TexturedMesh(vertices, faces.astype(np.int32), np.concatenate([m.uvs for m in meshes]),
                        np.concatenate([m.face_uvs + b for m, b in zip(meshes, uv_base)]).astype(np.int32),
                        np.concatenate([m.face_material + b for m, b in zip(meshes, atlas_base)]).astype(np.int32),
                        [atlas for m in meshes for atlas in m.atlases])


def repacked(mesh: TexturedMesh, scale: float, limit: int) -> TexturedMesh:
    """The mesh with a single texture of at most `limit` texels a side: each chart's region (the faces joined
    through shared texture coordinates) copied from its atlas scaled by `scale`, or less where they would not fit.
    Texels the faces do not use are left behind."""
    chart, charts = _charts(mesh)
    uv_atlas = np.zeros(len(mesh.uvs), np.int64)
    uv_atlas[mesh.face_uvs.ravel()] = np.repeat(mesh.face_material, 3)
    chart_atlas = np.zeros(charts, np.int64)
    chart_atlas[chart] = uv_atlas
    sizes = np.array([a.shape[1::-1] for a in mesh.atlases], np.float64)  # width, height
    pixel = np.column_stack([mesh.uvs[:, 0], 1 - mesh.uvs[:, 1]]) * sizes[uv_atlas] - 0.5
    while True:
        scaled = [np.maximum(np.round(s * scale), 1) for s in sizes]
        factor = np.array(scaled)[uv_atlas] / sizes[uv_atlas]
        where = texel_position(pixel, factor)
        low, high = np.full((charts, 2), np.inf), np.full((charts, 2), -np.inf)
        np.minimum.at(low, chart, where)
        np.maximum.at(high, chart, where)
        boxes = regions(low, high)
        if boxes.size.max(initial=0) <= limit:
            layout = pack(boxes.size, limit, limit)
            if len(layout.sizes) == 1:
                break
        scale *= 0.8  # a tile's charts would not fit one texture: fewer texels for all
        if scale < MIN_SCALE:
            raise ValueError(f"{charts} texture charts do not fit one texture of {limit} texels a side")
    width, height = layout.sizes[0]
    texture = np.zeros((height, width, 3), np.uint8)
    border = GUTTER + 2
    for index, atlas in enumerate(mesh.atlases):
        members = np.flatnonzero(chart_atlas == index)
        if not len(members):
            continue
        image = atlas if scale == 1 else cv2.resize(atlas, tuple(int(v) for v in scaled[index]),
                                                    interpolation=cv2.INTER_AREA)
        padded = cv2.copyMakeBorder(image, border, border, border, border, cv2.BORDER_REPLICATE)
        for c in members:
            (x, y), (w, h), (px, py) = boxes.origin[c], boxes.size[c], layout.position[c]
            x0, y0 = np.clip([x + border, y + border], 0, [padded.shape[1] - w, padded.shape[0] - h])
            texture[py:py + h, px:px + w] = padded[y0:y0 + h, x0:x0 + w]
    placed = where - boxes.origin[chart] + layout.position[chart]
    uvs = np.column_stack([(placed[:, 0] + 0.5) / width, 1 - (placed[:, 1] + 0.5) / height]).astype(np.float32)
    return TexturedMesh(mesh.vertices, mesh.faces, uvs, mesh.face_uvs, np.zeros(len(mesh.faces), np.int32),
                        [texture])


def _charts(mesh: TexturedMesh) -> tuple[np.ndarray, int]:
    """The chart of each texture coordinate: coordinates of one face are in one chart."""
    corners = mesh.face_uvs.astype(np.int64)
    rows = np.concatenate([corners[:, 0], corners[:, 1]])
    cols = np.concatenate([corners[:, 1], corners[:, 2]])
    graph = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(mesh.uvs), len(mesh.uvs)))
    charts, label = connected_components(graph, directed=False)
    return label, charts


def texel_size(mesh: TexturedMesh) -> float:
    """The side, in the mesh's units, of a texel on the surface: the root of the faces' area over the texels they
    cover (one texture)."""
    corners = mesh.vertices[mesh.faces]
    area = np.linalg.norm(np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]), axis=1).sum() / 2
    height, width = mesh.atlases[0].shape[:2]
    uv = mesh.uvs[mesh.face_uvs] * [width, height]
    (ax, ay), (bx, by) = (uv[:, 1] - uv[:, 0]).T, (uv[:, 2] - uv[:, 0]).T
    texels = np.abs(ax * by - ay * bx).sum() / 2
    return float(math.sqrt(area / texels)) if texels > 0 else 0.0
