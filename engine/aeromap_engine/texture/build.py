"""The textured mesh from a mesh, the views and their photographs: view per face, patches, the texel scale, the
atlas layout, global and local seam levelling, then the atlases filled one photograph at a time (so that one
decoded photograph is in memory at once)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import cv2
import numpy as np

from ..dense.views import View
from ..errors import InputError
from ..mesh.model import Mesh, TexturedMesh
from .atlas import GUTTER, Layout, Regions, pack, regions, texel_position
from .colours import ImageLoader, blurred_colours
from .consistency import drop_inconsistent
from .local_seams import LocalSeams, corrections, local_field, seam_edges, seam_points
from .patches import Charts, build_charts, split_large
from .seams import level_offsets, offset_field
from .selection import adjacent_faces, connected_regions, face_candidates, select_views

# Texels of all the atlases together, at most: past it the photographs are read at half their size, or a quarter...
# A small survey's photographs fit whole; a survey of a hundred is read at half size.
TEXEL_BUDGET = 2 * 8192**2
MAX_ATLAS = 8192  # texels a side: what every glTF viewer on a desktop loads
SHELF_FILL = 0.8  # share of an atlas that shelf packing is expected to fill
SHRINK = 0.9  # scale factor between attempts to fit a single atlas
SEAM_SCALE = 1 / 8  # photographs read this small (and blurred) for the colours either side of the seams
SEAM_BLUR = 1.0  # px at SEAM_SCALE
LOCAL_BLUR = 1.0  # px at half the texture's scale, where local levelling reads the colours along the seams
# With texturing-keep-unseen-faces: a strip of this many rows under the first atlas, in UNSEEN_COLOUR, which the
# faces no photograph shows take (a grey that says so, rather than a neighbour's colour that would pass for seen).
UNSEEN_ROWS = 8
UNSEEN_COLOUR = 128



@dataclass(frozen=True)
class TextureSettings:
    single_material: bool = False
    level_seams: bool = True
    level_seams_locally: bool = True
    max_size: int = MAX_ATLAS  # atlas side, texels
    keep_unseen: bool = False  # faces no view sees whole kept, in a flat grey


@dataclass
class Texels:
    """Where each patch's texels come from (its view's image at `scale`) and where they go (the layout)."""

    scale: float
    view_size: np.ndarray  # (V, 2) width, height of each view's scaled image
    view_scale: np.ndarray  # (V, 2) texels per full-resolution pixel, per axis
    regions: Regions
    layout: Layout


def texture_mesh(mesh: Mesh, views: Sequence[View], load: ImageLoader, settings: TextureSettings,
                 progress: Callable[[float], None] = lambda fraction: None) -> tuple[TexturedMesh, dict]:
    """The textured mesh (faces no view sees left out, or kept in grey with `keep_unseen`) and figures for the
    report."""
    candidates = face_candidates(mesh.vertices, mesh.faces, views, lambda f: progress(0.45 * f))
    candidates, dropped = drop_inconsistent(candidates, mesh.vertices, mesh.faces, views, load)
    progress(0.5)
    pairs = adjacent_faces(mesh.faces)
    labels = select_views(candidates, pairs)
    if not (labels >= 0).any():
        raise InputError("No face of the mesh is seen whole by any image: nothing to texture")
    charts = build_charts(mesh.vertices, mesh.faces, connected_regions(labels, pairs), labels, views)
    unseen = mesh.faces[labels < 0] if settings.keep_unseen else mesh.faces[:0]
    if len(unseen):
        narrower = replace(settings, max_size=settings.max_size - UNSEEN_ROWS)
        charts, texels = _arrange(charts, mesh.vertices, views, narrower)
        width, height = texels.layout.sizes[0]
        texels.layout.sizes[0] = (width, height + UNSEEN_ROWS)
    else:
        charts, texels = _arrange(charts, mesh.vertices, views, settings)
    progress(0.6)
    offsets, seam_figures = None, None
    if settings.level_seams:
        offsets, seam_figures = level_offsets(charts, _seam_colours(charts, views, load))
    local = _local_seams(charts, texels, views, load, offsets) if settings.level_seams_locally else None
    progress(0.7)
    atlases = _fill(charts, texels, views, load, offsets, local, lambda f: progress(0.7 + 0.3 * f))
    textured = _textured_mesh(mesh.vertices, charts, texels, atlases, unseen)
    figures = {"faces": len(mesh.faces), "faces_textured": len(charts.faces),
               "faces_unseen": len(mesh.faces) - len(charts.faces), "faces_unseen_kept": len(unseen),
               "patches": charts.patches,
               "views_inconsistent": dropped,
               "views_used": int(len(np.unique(charts.patch_view))), "texel_scale": round(float(texels.scale), 4),
               "atlases": [list(size) for size in texels.layout.sizes]}
    if seam_figures is not None:
        figures.update({"seam_points": seam_figures.seam_points, "seam_step_before": seam_figures.step_before,
                        "seam_step_after": seam_figures.step_after})
    if local is not None:
        figures.update(local.figures())
    return textured, figures


def _arrange(charts: Charts, vertices: np.ndarray, views: Sequence[View],
             settings: TextureSettings) -> tuple[Charts, Texels]:
    """The texel scale, patches cut to fit an atlas at it, and their layout; with a single material, the scale
    shrinks until one atlas holds everything."""
    low, high = charts.patch_bounds()
    area = float((high - low + 2 + 2 * GUTTER).prod(axis=1).sum())
    if settings.single_material:
        scale = min(1.0, np.sqrt(SHELF_FILL * settings.max_size**2 / area))
    else:
        # A power of two: JPEG decoders read those directly, and no resampling softens the photographs.
        scale = 2.0 ** np.floor(np.log2(min(1.0, np.sqrt(TEXEL_BUDGET / area))))
    while True:
        # A region spans its patch, the gutters and up to 4 texels of rounding.
        charts = split_large(charts, vertices, views, (settings.max_size - 2 * GUTTER - 4) / scale)
        texels = _layout(charts, views, scale, settings.max_size)
        if not settings.single_material or len(texels.layout.sizes) == 1:
            return charts, texels
        scale *= SHRINK


def _layout(charts: Charts, views: Sequence[View], scale: float, max_size: int) -> Texels:
    full = np.array([[view.camera.width, view.camera.height] for view in views], np.float64)
    view_size = np.maximum(1, np.ceil(full * scale - 1e-6)).astype(np.int64)  # as JPEG decoders round
    view_scale = view_size / full
    low, high = charts.patch_bounds()
    patch_scale = view_scale[charts.patch_view]
    placed = regions(texel_position(low, patch_scale), texel_position(high, patch_scale))
    # Shelves about as wide as a square atlas holding everything would be: a small model gets a square atlas
    # rather than one long strip.
    width = np.sqrt(placed.size.prod(axis=1).sum() / SHELF_FILL)
    width = int(min(max_size, max(placed.size[:, 0].max(), np.ceil(width))))
    return Texels(scale, view_size, view_scale, placed, pack(placed.size, width, max_size))


def _seam_colours(charts: Charts, views: Sequence[View], load: ImageLoader) -> np.ndarray:
    """Each texture point's colour (C, 3) in its patch's view, averaged over a few centimetres around it."""
    colours = np.zeros((len(charts.point_vertex), 3), np.float32)
    point_view = charts.patch_view[charts.point_patch]
    for number in np.unique(point_view):
        members = np.flatnonzero(point_view == number)
        colours[members] = blurred_colours(views[number], load, SEAM_SCALE, SEAM_BLUR, charts.point_pixel[members])
    return colours


def _local_seams(charts: Charts, texels: Texels, views: Sequence[View], load: ImageLoader,
                 offsets: np.ndarray | None) -> LocalSeams:
    """Both sides' colours along every seam, a texel apart, read at half the texture's scale (each photograph
    once), and each side's share of their difference after the global offsets."""
    edges = seam_edges(charts)
    points = seam_points(charts, edges, texels.view_scale[charts.patch_view])
    colours = np.zeros((len(points.edge), 2, 3), np.float32)
    view_of = charts.patch_view[points.patch]
    for number in np.unique(view_of):
        sample, side = np.nonzero(view_of == number)
        colours[sample, side] = blurred_colours(views[number], load, texels.scale / 2, LOCAL_BLUR,
                                                points.pixel[sample, side])
    levels = np.zeros_like(colours) if offsets is None else points.on_edges(offsets, edges)
    correction = corrections(colours, levels)
    return LocalSeams(points, correction, np.zeros_like(correction))


def _fill(charts: Charts, texels: Texels, views: Sequence[View], load: ImageLoader, offsets: np.ndarray | None,
          local: LocalSeams | None, progress: Callable[[float], None]) -> list[np.ndarray]:
    """The atlases (RGB), one view's photograph at a time."""
    atlases = [np.zeros((height, width, 3), np.uint8) for width, height in texels.layout.sizes]
    face_order = np.argsort(charts.face_patch, kind="stable")
    face_start = np.searchsorted(charts.face_patch[face_order], np.arange(charts.patches + 1))
    point_start = np.searchsorted(charts.point_patch, np.arange(charts.patches + 1))
    origin, size = texels.regions.origin, texels.regions.size
    pad = GUTTER + 2  # regions reach this far outside the image
    if local is not None:
        # Each patch's seam points, from either side.
        local_patch = local.points.patch.ravel()
        local_order = np.argsort(local_patch, kind="stable")
        local_start = np.searchsorted(local_patch[local_order], np.arange(charts.patches + 1))
    used = np.unique(charts.patch_view)
    for step, number in enumerate(used):
        view = views[number]
        width, height = texels.view_size[number]
        image = load(view, texels.scale)
        if image.shape[:2] != (height, width):
            image = cv2.resize(image, (int(width), int(height)), interpolation=cv2.INTER_AREA)
        image = cv2.copyMakeBorder(cv2.cvtColor(image, cv2.COLOR_BGR2RGB), pad, pad, pad, pad, cv2.BORDER_REPLICATE)
        for patch in np.flatnonzero(charts.patch_view == number):
            (x, y), (w, h) = origin[patch] + pad, size[patch]
            region = image[y:y + h, x:x + w]
            field = np.zeros((int(h), int(w), 3), np.float32)
            if offsets is not None:
                first, last = point_start[patch], point_start[patch + 1]
                points = texel_position(charts.point_pixel[first:last], texels.view_scale[number]) - origin[patch]
                triangles = charts.face_points[face_order[face_start[patch]:face_start[patch + 1]]] - first
                field += offset_field(points, triangles, offsets[first:last], (int(h), int(w)))
            if local is not None:
                flat = local_order[local_start[patch]:local_start[patch + 1]]  # indices into (S * 2)
                where = texel_position(local.points.pixel.reshape(-1, 2)[flat], texels.view_scale[number])
                where -= origin[patch]
                seam_field, applied = local_field(where, local.correction.reshape(-1, 3)[flat], (int(h), int(w)))
                field += seam_field
                local.applied.reshape(-1, 3)[flat] = applied
            if offsets is not None or local is not None:
                region = cv2.add(region, field, dtype=cv2.CV_8U)  # rounded and saturated
            ax, ay = texels.layout.position[patch]
            atlases[texels.layout.atlas[patch]][ay:ay + h, ax:ax + w] = region
        progress((step + 1) / len(used))
    return atlases


def _textured_mesh(vertices: np.ndarray, charts: Charts, texels: Texels, atlases: list[np.ndarray],
                   unseen: np.ndarray) -> TexturedMesh:
    """The mesh of the textured faces and the `unseen` ones kept (vertices no face uses left out), texture
    coordinates in OBJ's convention; the unseen faces all take one texel of the first atlas's grey strip."""
    used, faces = np.unique(np.concatenate([charts.faces, unseen]), return_inverse=True)
    patch = charts.point_patch
    where = (texel_position(charts.point_pixel, texels.view_scale[charts.patch_view[patch]])
             - texels.regions.origin[patch] + texels.layout.position[patch])
    atlas_size = np.array(texels.layout.sizes, np.float64)[texels.layout.atlas[patch]]
    uvs = np.c_[(where[:, 0] + 0.5) / atlas_size[:, 0], 1 - (where[:, 1] + 0.5) / atlas_size[:, 1]]
    face_points, face_material = charts.face_points, texels.layout.atlas[charts.face_patch]
    if len(unseen):
        width, height = texels.layout.sizes[0]
        grey = [UNSEEN_ROWS / 2 / width, UNSEEN_ROWS / 2 / height]  # the strip's middle, in from the left
        uvs = np.vstack([uvs, grey])
        face_points = np.vstack([face_points, np.full((len(unseen), 3), len(uvs) - 1)])
        face_material = np.concatenate([face_material, np.zeros(len(unseen), face_material.dtype)])
        atlases[0][height - UNSEEN_ROWS:] = UNSEEN_COLOUR
    return TexturedMesh(vertices[used], faces.reshape(-1, 3).astype(np.int32), uvs.astype(np.float32),
                        face_points.astype(np.int32), face_material.astype(np.int32), atlases)
