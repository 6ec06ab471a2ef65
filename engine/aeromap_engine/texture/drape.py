"""The 2.5D mesh draped with the orthophoto: each face takes the orthophoto's pixels straight below it.

ODM renders its orthophoto from the 2.5D textured model; Aeromap makes the orthophoto from the photographs (true
orthophoto, seamlines, blending, photometric corrections), and the 2.5D model takes its colours from it. The two
agree by construction, at the orthophoto's resolution, and the second textured model costs seconds rather than a
second texturing from the photographs.

The orthophoto is cut into squares of at most an atlas's side; a face belongs to the square its centre lies in,
and each square's atlas is the orthophoto's window around its faces (shrunk where that window is larger than an
atlas may be). Faces over transparent pixels (outside what the orthophoto shows) are left out, as the texturing
leaves out faces no photograph sees, or, with keep_unseen, take a flat grey.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import cv2
import numpy as np

from ..mesh.model import Mesh, TexturedMesh
from .build import UNSEEN_COLOUR

MARGIN = 1  # orthophoto pixels kept around a square's faces, for the viewer's bilinear sampling at their edges


@dataclass(frozen=True)
class PixelWindow:
    column: int
    row: int
    width: int
    height: int


# The orthophoto's pixels in a window: (height, width, 4) uint8, RGB and alpha.
WindowReader = Callable[[PixelWindow], np.ndarray]


@dataclass
class _Square:
    faces: np.ndarray  # indices into the mesh's faces
    origin: np.ndarray  # (2,) column, row of the atlas's window in the orthophoto
    size: np.ndarray  # (2,) width, height of the window, orthophoto pixels
    atlas: np.ndarray  # (h, w, 3) uint8 RGB


def drape(mesh: Mesh, pixels: np.ndarray, image_size: tuple[int, int], read: WindowReader, max_size: int,
          keep_unseen: bool) -> TexturedMesh | None:
    """The mesh textured from the orthophoto, None where it shows none of it. `pixels` (N, 2): each vertex's
    column and row in it, pixel edges at whole numbers; `image_size`: its width and height."""
    centres = pixels[mesh.faces].mean(axis=1)
    side = max_size - 2 * MARGIN
    _, square_of = np.unique(np.floor(centres / side).astype(np.int64), axis=0, return_inverse=True)
    square_of = square_of.ravel()
    squares = []
    for number in range(int(square_of.max(initial=-1)) + 1):
        square = _square(np.flatnonzero(square_of == number), mesh.faces, pixels, centres, image_size, read,
                         max_size, keep_unseen)
        if square is not None:
            squares.append(square)
    return _textured(mesh, pixels, squares) if squares else None


def _square(members: np.ndarray, faces: np.ndarray, pixels: np.ndarray, centres: np.ndarray,
            image_size: tuple[int, int], read: WindowReader, max_size: int, keep_unseen: bool) -> _Square | None:
    """One square's faces that the orthophoto shows (all with keep_unseen) and its atlas; None when none is."""
    corners = pixels[faces[members]].reshape(-1, 2)
    low = np.maximum(np.floor(corners.min(axis=0)) - MARGIN, 0).astype(np.int64)
    high = np.minimum(np.ceil(corners.max(axis=0)) + MARGIN, image_size).astype(np.int64)
    if (high <= low).any():
        return None  # wholly outside the orthophoto
    size = high - low
    rgba = read(PixelWindow(int(low[0]), int(low[1]), int(size[0]), int(size[1])))
    column, row = np.clip(np.floor(centres[members] - low).astype(np.int64), 0, size - 1).T
    rgb = np.ascontiguousarray(rgba[:, :, :3])
    if keep_unseen:
        rgb[rgba[:, :, 3] == 0] = UNSEEN_COLOUR
    else:
        members = members[rgba[row, column, 3] > 0]
        if not len(members):
            return None
    scale = min(1.0, max_size / float(size.max()))
    if scale < 1.0:
        rgb = cv2.resize(rgb, tuple(int(n) for n in np.maximum(1, np.floor(size * scale))),
                         interpolation=cv2.INTER_AREA)
    return _Square(members, low, size, rgb)


def _textured(mesh: Mesh, pixels: np.ndarray, squares: list[_Square]) -> TexturedMesh:
    """One texture point per vertex and atlas it is used in; vertices no kept face uses left out."""
    face_index = np.concatenate([square.faces for square in squares])
    material = np.concatenate([np.full(len(square.faces), n, np.int32) for n, square in enumerate(squares)])
    corners = mesh.faces[face_index]
    keys, face_uvs = np.unique(corners.astype(np.int64) * len(squares) + material[:, None], return_inverse=True)
    vertex, atlas = keys // len(squares), keys % len(squares)
    origin = np.array([square.origin for square in squares], np.float64)[atlas]
    size = np.array([square.size for square in squares], np.float64)[atlas]
    relative = np.clip((pixels[vertex] - origin) / size, 0.0, 1.0)
    uvs = np.column_stack([relative[:, 0], 1.0 - relative[:, 1]]).astype(np.float32)  # OBJ's v runs upwards
    used, faces = np.unique(corners, return_inverse=True)
    return TexturedMesh(mesh.vertices[used], faces.reshape(-1, 3).astype(np.int32), uvs,
                        face_uvs.reshape(-1, 3).astype(np.int32), material, [square.atlas for square in squares])
