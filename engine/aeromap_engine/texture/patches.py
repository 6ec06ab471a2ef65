"""Texture patches: connected faces that take their colour from one view. A patch's texture coordinates are its
corners' projections into that view's image, so its texture is a region of the photograph copied as it is
(scaled to the texture's resolution), without any resampling through the mesh.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..dense.views import View
from ..ortho.visibility import Projection


@dataclass
class Charts:
    """The textured faces grouped in patches, with one texture point per vertex and patch (OBJ's `vt`): where
    the vertex falls in the patch's view, in full-resolution pixels (OpenCV convention)."""

    faces: np.ndarray  # (F, 3) int32 vertex indices of the textured faces
    face_patch: np.ndarray  # (F,) int32
    face_points: np.ndarray  # (F, 3) int32 indices into the texture points
    patch_view: np.ndarray  # (P,) int32 view index
    point_vertex: np.ndarray  # (C,) int32
    point_patch: np.ndarray  # (C,) int32, ascending
    point_pixel: np.ndarray  # (C, 2) float64

    @property
    def patches(self) -> int:
        return len(self.patch_view)

    def patch_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Per patch, the lowest and highest pixel position of its points (P, 2) each."""
        starts = np.searchsorted(self.point_patch, np.arange(self.patches))
        return (np.minimum.reduceat(self.point_pixel, starts, axis=0),
                np.maximum.reduceat(self.point_pixel, starts, axis=0))


def build_charts(vertices: np.ndarray, faces: np.ndarray, face_patch: np.ndarray, face_view: np.ndarray,
                 views: Sequence[View]) -> Charts:
    """Charts of the faces that have a patch (face_patch >= 0); face_view gives each face's view."""
    kept = face_patch >= 0
    faces, face_patch, face_view = faces[kept], face_patch[kept], face_view[kept]
    patch_view = np.zeros(int(face_patch.max()) + 1 if len(face_patch) else 0, np.int32)
    patch_view[face_patch] = face_view
    key = face_patch[:, None].astype(np.int64) * len(vertices) + faces
    unique, inverse = np.unique(key, return_inverse=True)
    point_patch, point_vertex = (unique // len(vertices)).astype(np.int32), (unique % len(vertices)).astype(np.int32)
    pixel = np.zeros((len(unique), 2))
    point_view = patch_view[point_patch]
    for number in np.unique(point_view):
        members = np.flatnonzero(point_view == number)
        projection = Projection.of(views[number], vertices[point_vertex[members]])
        pixel[members] = np.c_[projection.u, projection.v]
    return Charts(faces, face_patch, inverse.reshape(-1, 3).astype(np.int32), patch_view, point_vertex,
                  point_patch, pixel)


def split_large(charts: Charts, vertices: np.ndarray, views: Sequence[View], largest: float) -> Charts:
    """Charts in which no patch spans more than `largest` pixels of its view either way: larger patches are cut
    in two across their longer side (at the median face), again until all fit."""
    while True:
        low, high = charts.patch_bounds()
        extent = high - low
        large = np.flatnonzero(extent.max(axis=1) > largest)
        if not len(large):
            return charts
        face_patch = charts.face_patch.copy()
        centres = charts.point_pixel[charts.face_points].mean(axis=1)
        next_patch = charts.patches
        for patch in large:
            members = np.flatnonzero(face_patch == patch)
            axis = int(np.argmax(extent[patch]))
            upper = members[centres[members, axis] > np.median(centres[members, axis])]
            if not len(upper) or len(upper) == len(members):
                upper = members[len(members) // 2:]  # all centres alike: any half will do
            face_patch[upper] = next_patch
            next_patch += 1
        face_view = np.append(charts.patch_view, charts.patch_view[large])[face_patch]
        charts = build_charts(vertices, charts.faces, face_patch, face_view, views)
