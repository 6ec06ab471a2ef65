"""Texturing on synthetic scenes whose answer is known: a plane painted with a known pattern, photographed by pinhole
cameras rendered here, and a box that hides part of the ground from one camera."""

from __future__ import annotations

import math
from collections.abc import Callable

import cv2
import numpy as np
import pycolmap
import pytest
from scipy import ndimage

from aeromap_engine.dense.views import View
from aeromap_engine.mesh.model import Mesh, TexturedMesh
from aeromap_engine.ortho.visibility import Projection, mesh_zbuffer, triangle_samples, visible
from aeromap_engine.texture.atlas import pack
from aeromap_engine.texture.build import UNSEEN_COLOUR, TextureSettings, texture_mesh
from aeromap_engine.texture.consistency import inconsistent
from aeromap_engine.texture.drape import PixelWindow, drape
from aeromap_engine.texture.seams import offset_field
from aeromap_engine.texture.selection import (Candidates, adjacent_faces, face_candidates, independent_sets,
                                              neighbour_table, select_views)

WIDTH, HEIGHT, FOCAL = 400, 300, 400.0  # 5 cm pixels on the ground from 20 m


def look_down(name: str, center: tuple[float, float, float]) -> View:
    camera = pycolmap.Camera.create_from_model_id(1, pycolmap.CameraModelId.PINHOLE, FOCAL, WIDTH, HEIGHT)
    rotation = np.diag([1.0, -1.0, -1.0])  # camera x east, y south, z down
    return View(name, camera, rotation, -rotation @ np.asarray(center, float), np.zeros(0, np.int64))


def pattern(xy: np.ndarray) -> np.ndarray:
    """The plane's paint (RGB, 28..228), smooth at the cameras' resolution."""
    x, y = xy[:, 0], xy[:, 1]
    return np.c_[128 + 100 * np.sin(x / 1.3), 128 + 100 * np.cos(y / 1.7), 128 + 60 * np.sin((x + y) / 2.1)]


def photograph(view: View, gain: float | Callable[[np.ndarray], np.ndarray] = 1.0) -> np.ndarray:
    """What the view sees of the painted plane z = 0 (BGR), the brightness times `gain` (or gain(xy) on the
    ground)."""
    cols, rows = np.meshgrid(np.arange(WIDTH) + 0.5, np.arange(HEIGHT) + 0.5)
    rays = np.stack([(cols - WIDTH / 2) / FOCAL, (rows - HEIGHT / 2) / FOCAL, np.ones_like(cols)], -1) @ view.rotation
    ground = view.center + rays * (-view.center[2] / rays[..., 2:])
    xy = ground.reshape(-1, 3)[:, :2]
    rgb = pattern(xy) * (gain(xy)[:, None] if callable(gain) else gain)
    return np.clip(np.rint(rgb), 0, 255).astype(np.uint8).reshape(HEIGHT, WIDTH, 3)[:, :, ::-1].copy()


def loader(photos: dict[str, np.ndarray]):
    """Photographs at about the scale asked, never smaller, as the JPEG decoder gives them."""
    def load(view: View, scale: float) -> np.ndarray:
        factor = max(f for f in (1, 2, 4, 8) if f == 1 or 1 / f >= scale)
        image = photos[view.name]
        return cv2.resize(image, (math.ceil(WIDTH / factor), math.ceil(HEIGHT / factor)), interpolation=cv2.INTER_AREA)
    return load


def plane(x: tuple[float, float], y: tuple[float, float], step: float = 1.0) -> Mesh:
    """A grid on z = 0, faces counter-clockwise from above."""
    xs, ys = np.arange(x[0], x[1] + 1e-9, step), np.arange(y[0], y[1] + 1e-9, step)
    gx, gy = np.meshgrid(xs, ys)
    index = np.arange(gx.size).reshape(gx.shape)
    a, b, c, d = index[:-1, :-1], index[:-1, 1:], index[1:, :-1], index[1:, 1:]  # rows go north
    faces = np.r_[np.stack([a, b, d], -1).reshape(-1, 3), np.stack([a, d, c], -1).reshape(-1, 3)]
    return Mesh(np.c_[gx.ravel(), gy.ravel(), np.zeros(gx.size)], faces.astype(np.int32))


def surface_colours(mesh: TexturedMesh) -> tuple[np.ndarray, np.ndarray]:
    """Points spread over the textured faces, a texel apart, and the atlas colour at each: (S, 3), (S, 3)."""
    points, colours = [], []
    for material, atlas in enumerate(mesh.atlases):
        faces = np.flatnonzero(mesh.face_material == material)
        size = np.array([atlas.shape[1], atlas.shape[0]])
        texel = np.c_[mesh.uvs[:, 0], 1 - mesh.uvs[:, 1]] * size - 0.5
        values = np.concatenate([mesh.vertices[mesh.faces[faces]], texel[mesh.face_uvs[faces]]], axis=2)
        samples = triangle_samples(texel[mesh.face_uvs[faces]].astype(np.float32), values.astype(np.float32), 1.0)[1]
        x, y = samples[:, 3:5].T
        points.append(samples[:, :3])
        colours.append(np.column_stack([ndimage.map_coordinates(atlas[:, :, c].astype(np.float64), [y, x], order=1)
                                        for c in range(3)]))
    return np.concatenate(points), np.concatenate(colours)


def two_views() -> list[View]:
    return [look_down("west", (-4.0, 0.0, 20.0)), look_down("east", (4.0, 0.0, 20.0))]


def textured_plane(settings: TextureSettings, east_gain: float | Callable[[np.ndarray], np.ndarray] = 1.0,
                   extent: float = 12.0, views: list[View] | None = None, step: float = 1.0, north: float = 6.0):
    views = views or two_views()
    photos = {views[0].name: photograph(views[0]), views[1].name: photograph(views[1], east_gain)}
    return texture_mesh(plane((-extent, extent), (-north, north), step), views, loader(photos), settings)


def assert_reproduces_pattern(mesh: TexturedMesh, tolerance: float) -> None:
    """Median error under `tolerance` grey levels (a texture one texel off its place misses 0.5 by double)."""
    points, colours = surface_colours(mesh)
    error = np.abs(colours - pattern(points[:, :2]))
    assert np.median(error) < tolerance and np.percentile(error, 95) < 3 * tolerance


# --- the whole method on a painted plane ------------------------------------------------------------------------

def test_atlas_reproduces_the_paint_and_faces_outside_every_frame_are_dropped() -> None:
    textured, figures = textured_plane(TextureSettings(), extent=16.0)
    assert_reproduces_pattern(textured, 0.5)
    # The frames reach x = +-14 m: the grid beyond is seen by no camera.
    assert figures["faces_unseen"] > 0 and figures["faces_textured"] == len(textured.faces)
    assert np.abs(textured.vertices[:, 0]).max() <= 14.0
    assert figures["views_used"] == 2 and figures["texel_scale"] == 1.0
    assert len(textured.atlases) == 1 and textured.uvs.min() >= 0 and textured.uvs.max() <= 1


def test_unseen_faces_kept_in_grey_on_request() -> None:
    mesh = plane((-16, 16), (-6, 6))
    textured, figures = textured_plane(TextureSettings(keep_unseen=True), extent=16.0)
    assert figures["faces_unseen"] > 0 and figures["faces_unseen_kept"] == figures["faces_unseen"]
    assert len(textured.faces) == len(mesh.faces) and np.abs(textured.vertices[:, 0]).max() == 16.0
    points, colours = surface_colours(textured)
    beyond = np.abs(points[:, 0]) > 14.5  # seen by no camera: every texel there is the strip's grey
    assert beyond.any() and np.abs(colours[beyond] - 128).max() < 1
    seen = np.abs(points[:, 0]) < 13
    assert np.median(np.abs(colours[seen] - pattern(points[seen, :2]))) < 0.5


# The east camera, lower, shows the plane larger wherever it sees it: the seam lies near its frame's west edge.
STEP_VIEWS = [look_down("west", (-4.0, 0.0, 20.0)), look_down("east", (4.0, 0.0, 16.0))]


def seam_steps(textured: TexturedMesh, seam: float, near: float, far: float) -> np.ndarray:
    """Across the seam at x = `seam`, per 0.25 m of y: the difference between the error against the paint east
    and west of it, averaged over the points `near` to `far` metres from it on each side."""
    points, colours = surface_colours(textured)
    error = (colours - pattern(points[:, :2])).mean(axis=1)
    offset, band = points[:, 0] - seam, np.floor(points[:, 1] / 0.25).astype(int)
    steps = []
    for y in np.unique(band):
        west = error[(band == y) & (offset > -far) & (offset < -near)]
        east = error[(band == y) & (offset > near) & (offset < far)]
        if len(west) and len(east):
            steps.append(abs(east.mean() - west.mean()))
    return np.array(steps)


def test_seam_levelling_removes_the_exposure_step_between_views() -> None:
    steps = {}
    for level in (False, True):
        settings = TextureSettings(level_seams=level, level_seams_locally=False)
        textured, figures = textured_plane(settings, east_gain=0.75, views=STEP_VIEWS)
        steps[level] = np.median(seam_steps(textured, -4.0, 1.0, 2.0))
    assert steps[False] > 20  # a quarter of the brightness lost east of the seam
    assert steps[True] < steps[False] / 4
    assert figures["seam_step_after"] < figures["seam_step_before"] / 4


def test_local_levelling_blends_what_changes_along_the_seam_between_vertices() -> None:
    """Faces 4 m wide, the east photograph's brightness waving along y every 2 m, the same at every vertex: the
    global offsets, one per vertex, cannot follow it; local levelling, a texel at a time along the seam, does."""
    def waving(xy: np.ndarray) -> np.ndarray:
        return 0.8 + 0.12 * np.sin(2 * np.pi * xy[:, 1] / 2.0)
    steps, figures = {}, {}
    for local in (False, True):
        textured, figures[local] = textured_plane(TextureSettings(level_seams_locally=local), east_gain=waving,
                                                  views=STEP_VIEWS, step=4.0, north=4.0)
        steps[local] = np.median(seam_steps(textured, 0.0, 0.0, 0.1))  # the seam falls on a vertex line
    assert steps[False] > 5
    assert steps[True] < steps[False] / 4  # measured: 11.5 and 2.5 grey levels
    assert "seam_step_local_before" not in figures[False]
    assert figures[True]["seam_step_local_after"] < figures[True]["seam_step_local_before"] / 3


def test_a_car_that_one_photograph_caught_does_not_paint_the_model() -> None:
    """Three photographs from above; the middle one, the best for the whole plane (which without the car it alone
    textures), caught a red car parked there that the others do not show. The car's faces take another view: the
    paint is there, not the car. The views' exposures differ by up to 15 %, which is no reason to drop any."""
    views = [look_down("west", (-6.0, 0.0, 20.0)), look_down("middle", (0.0, 0.0, 20.0)),
             look_down("east", (6.0, 0.0, 20.0))]
    photos = {view.name: photograph(view, gain) for view, gain in zip(views, (0.9, 1.0, 1.05))}
    car = (slice(HEIGHT // 2 - 30, HEIGHT // 2 + 30), slice(WIDTH // 2 - 30, WIDTH // 2 + 30))  # 3 m square
    photos["middle"][car] = (40, 30, 220)  # BGR
    textured, figures = texture_mesh(plane((-4, 4), (-4, 4)), views, loader(photos), TextureSettings())
    points, colours = surface_colours(textured)
    under = (np.abs(points[:, 0]) < 1.4) & (np.abs(points[:, 1]) < 1.4)
    error = np.abs(colours - pattern(points[:, :2]))[under]
    print(f"\nunder the car: median error {np.median(error):.1f} levels, 99th percentile "
          f"{np.percentile(error, 99):.1f}; candidates dropped {figures['views_inconsistent']}")
    # The car's red is 120 levels off the paint in the median; the exposures' steps stay.
    assert np.median(error) < 20 and np.percentile(error, 99) < 40
    # Only faces under the car lost the middle view: 3 x 3 m, 1 m cells of two faces each, at most 18.
    assert 4 <= figures["views_inconsistent"] <= 18


def test_consistency_drops_the_view_that_stands_off_and_only_where_the_others_agree() -> None:
    grey, red = np.array([120.0, 120.0, 120.0]), np.array([220.0, 30.0, 40.0])
    colours = np.full((7, 8, 3), np.nan)
    colours[0, :4] = [grey * 0.95, grey, grey * 1.05, red]  # one view saw a red car
    colours[1, :4] = [grey * 0.9, grey, grey * 1.1, grey * 1.3]  # one photograph a third brighter: exposure
    colours[2, :2] = [grey, red]  # two views: nothing to go by
    colours[3, :3] = [grey, red, [30, 200, 40]]  # no two agree
    colours[4, :4] = [grey * 0.7, grey, grey * 1.3, red]  # the others disagree too (a tree's crown)
    colours[5, :3] = [grey, grey * 1.02, [240, 240, 240]]  # a walker's white shirt
    colours[6, 2:5] = [grey, grey * 1.02, red]  # candidates in any slots
    off = inconsistent(colours)
    assert off[0].tolist() == [False, False, False, True] + [False] * 4
    assert not off[1:5].any()
    assert off[5].tolist() == [False, False, True] + [False] * 5
    assert off[6].tolist() == [False] * 4 + [True] + [False] * 3


def test_small_atlases_hold_cut_patches_with_texture_coordinates_inside() -> None:
    textured, figures = textured_plane(TextureSettings(max_size=128))
    assert len(textured.atlases) > 1
    assert all(atlas.shape[0] <= 128 and atlas.shape[1] <= 128 for atlas in textured.atlases)
    assert figures["patches"] > 2  # each camera's half of the plane is wider than an atlas: cut
    assert textured.uvs.min() >= 0 and textured.uvs.max() <= 1
    assert_reproduces_pattern(textured, 0.5)


def test_single_material_scales_texels_down_into_one_atlas() -> None:
    textured, figures = textured_plane(TextureSettings(single_material=True, max_size=128))
    assert len(textured.atlases) == 1 and max(textured.atlases[0].shape[:2]) <= 128
    assert (textured.face_material == 0).all()
    assert figures["texel_scale"] < 0.5
    assert_reproduces_pattern(textured, 1.0)


# --- the 2.5D model draped with the orthophoto ---------------------------------------------------------------------

ORTHO_CELL = 0.05  # m, over x in [-12, 12] and y in [-6, 6]: 480 x 240 px, transparent east of x = 8


def orthophoto() -> np.ndarray:
    """The painted plane seen straight from above (RGBA), with a transparent strip in the east."""
    cols, rows = np.meshgrid(np.arange(480) + 0.5, np.arange(240) + 0.5)
    x, y = -12 + cols * ORTHO_CELL, 6 - rows * ORTHO_CELL
    rgb = np.clip(np.rint(pattern(np.c_[x.ravel(), y.ravel()])), 0, 255).reshape(240, 480, 3)
    return np.dstack([rgb, np.where(x > 8, 0, 255)]).astype(np.uint8)


def draped_plane(max_size: int, keep_unseen: bool = False, step: float = 1.0) -> TexturedMesh:
    image = orthophoto()
    mesh = plane((-11, 11), (-5, 5), step)
    pixels = np.c_[(mesh.vertices[:, 0] + 12) / ORTHO_CELL, (6 - mesh.vertices[:, 1]) / ORTHO_CELL]

    def read(window: PixelWindow) -> np.ndarray:
        return image[window.row:window.row + window.height, window.column:window.column + window.width]
    return drape(mesh, pixels, (480, 240), read, max_size, keep_unseen)


def test_the_draped_model_shows_the_orthophoto_in_place_over_several_atlases() -> None:
    model = draped_plane(max_size=128)
    assert len(model.atlases) >= 6 and all(max(atlas.shape[:2]) <= 128 for atlas in model.atlases)
    assert model.uvs.min() >= 0 and model.uvs.max() <= 1
    centres = model.vertices[model.faces].mean(axis=1)
    assert centres[:, 0].max() < 8 and len(model.faces) == 2 * 19 * 10  # no face over the transparent strip
    assert_reproduces_pattern(model, 1.0)


def test_the_draped_model_keeps_unseen_faces_in_grey() -> None:
    model = draped_plane(max_size=512, keep_unseen=True)
    assert len(model.faces) == 2 * 22 * 10 and len(model.atlases) == 1
    points, colours = surface_colours(model)
    east = points[:, 0] > 8.5
    assert (colours[east] == UNSEEN_COLOUR).all()
    assert np.median(np.abs(colours[points[:, 0] < 7.5] - pattern(points[points[:, 0] < 7.5, :2]))) < 1.0


def test_a_window_wider_than_an_atlas_is_shrunk_into_one() -> None:
    model = draped_plane(max_size=64, step=5.5)  # faces of 110 px: windows of up to 224 px
    assert all(max(atlas.shape[:2]) <= 64 for atlas in model.atlases)
    assert max(max(atlas.shape[:2]) for atlas in model.atlases) == 64
    assert_reproduces_pattern(model, 2.0)  # the paint is smooth: a window shrunk 3.5 times keeps it


# --- view selection -----------------------------------------------------------------------------------------------

def box(low: tuple[float, float, float], high: tuple[float, float, float]) -> Mesh:
    """A closed box, faces counter-clockwise seen from outside."""
    corners = np.array([[x, y, z] for z in (low[2], high[2]) for y in (low[1], high[1]) for x in (low[0], high[0])])
    quads = [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2), (1, 3, 7, 5)]
    faces = [(a, b, c) for a, b, c, d in quads] + [(a, c, d) for a, b, c, d in quads]
    return Mesh(corners.astype(float), np.array(faces, np.int32))


def merged(*meshes: Mesh) -> Mesh:
    offsets = np.cumsum([0] + [len(m.vertices) for m in meshes[:-1]])
    return Mesh(np.concatenate([m.vertices for m in meshes]),
                np.concatenate([m.faces + o for m, o in zip(meshes, offsets)]).astype(np.int32))


@pytest.mark.parametrize("occluded", [False, True])
def test_a_face_hidden_from_the_best_view_takes_one_that_sees_it(occluded: bool) -> None:
    near, far = look_down("near", (4.0, 0.0, 10.0)), look_down("far", (8.0, 0.0, 25.0))
    ground = plane((6, 10), (-2, 2), 0.5)
    # From the near camera, the ray to the ground around (8, 0) passes x = 6 at 5 m: a 7 m box there hides it.
    mesh = merged(ground, box((5.5, -1.2, 0.0), (6.5, 1.2, 7.0))) if occluded else ground
    candidates = face_candidates(mesh.vertices, mesh.faces, [near, far])
    labels = select_views(candidates, adjacent_faces(mesh.faces))
    centres = mesh.vertices[mesh.faces].mean(axis=1)
    behind = (np.abs(centres[:, 0] - 8) < 0.6) & (np.abs(centres[:, 1]) < 0.6) & (centres[:, 2] == 0)
    assert behind.sum() >= 8
    # The near camera sees the ground nearer, so larger: it wins unless the box hides the ground from it.
    assert (labels[behind] == (1 if occluded else 0)).all()


def strip(count: int) -> np.ndarray:
    """Faces of a triangle strip: face i shares an edge with faces i - 1 and i + 1."""
    return np.array([(i, i + 1, i + 2) for i in range(count)], np.int32)


def test_potts_smoothing_removes_a_lone_view_but_keeps_large_regions() -> None:
    faces = strip(40)
    candidates = Candidates.empty(len(faces), 2)
    candidates.views[:] = [0, 1]
    prefers_one = np.zeros(len(faces), bool)
    prefers_one[20:] = True  # a region that prefers view 1...
    prefers_one[7] = True  # ...and a lone face that does, by a little
    candidates.quality[:] = np.where(prefers_one[:, None], [0.8, 1.0], [1.0, 0.8])
    labels = select_views(candidates, adjacent_faces(faces))
    expected = np.r_[np.zeros(20), np.ones(20)]
    assert (labels == expected).all()


def test_a_blob_that_prefers_another_view_by_a_hair_joins_its_surroundings() -> None:
    """Inside a blob every face agrees with its neighbours, so no single face moves: the whole region must."""
    mesh = plane((0, 12), (0, 12))
    centres = mesh.vertices[mesh.faces].mean(axis=1)
    blob = (np.abs(centres[:, 0] - 6) < 2) & (np.abs(centres[:, 1] - 6) < 2)
    candidates = Candidates.empty(len(mesh.faces), 2)
    candidates.views[:] = [0, 1]
    candidates.quality[:] = np.where(blob[:, None], [0.97, 1.0], [1.0, 0.5])
    assert (select_views(candidates, adjacent_faces(mesh.faces)) == 0).all()


def test_independent_sets_hold_no_neighbours_and_cover_every_face() -> None:
    faces = plane((0, 10), (0, 10)).faces
    pairs = adjacent_faces(faces)
    assert len(pairs) == 3 * len(faces) // 2 - 10 * 2  # interior edges of a 10 x 10 grid of squares, halved
    sets = independent_sets(neighbour_table(pairs, len(faces)), np.random.default_rng(1))
    colour = np.full(len(faces), -1)
    for number, members in enumerate(sets):
        assert (colour[members] == -1).all()
        colour[members] = number
    assert (colour >= 0).all()
    assert (colour[pairs[:, 0]] != colour[pairs[:, 1]]).all()


# --- rasterising, z-buffer, packing, offsets ----------------------------------------------------------------------

def test_triangle_samples_cover_every_pixel_of_a_triangle() -> None:
    corners = np.array([[[2.3, 1.1], [40.7, 9.2], [13.5, 30.8]]], np.float32)
    _, values = triangle_samples(corners, corners, 0.7)
    hit = np.zeros((40, 50), bool)
    hit[np.rint(values[:, 1]).astype(int), np.rint(values[:, 0]).astype(int)] = True
    inside = np.zeros((40, 50), np.uint8)
    cv2.fillPoly(inside, [np.rint(corners[0] * 16).astype(np.int32)], 1, shift=4)
    interior = cv2.erode(inside, np.ones((3, 3), np.uint8)).astype(bool)  # pixels well inside the edges
    assert hit[interior].all()
    assert not (hit & ~cv2.dilate(inside, np.ones((3, 3), np.uint8)).astype(bool)).any()


def test_mesh_zbuffer_hides_what_lies_behind_a_near_triangle() -> None:
    view = look_down("v", (0.0, 0.0, 20.0))
    ground = plane((-4, 4), (-3, 3), 0.5)
    roof = plane((-1, 1), (-1, 1), 0.5)
    roof.vertices[:, 2] = 10.0
    mesh = merged(ground, roof)
    projection = Projection.of(view, mesh.vertices)
    buffer = mesh_zbuffer(projection, mesh.faces, 4.0, (HEIGHT, WIDTH))
    probes = np.array([[0.0, 0.0, 0.0], [0.5, -0.5, 0.0], [3.0, 2.0, 0.0], [0.0, 0.0, 10.0]])
    seen = visible(Projection.of(view, probes), buffer, 4.0)
    assert seen.tolist() == [False, False, True, True]


def test_shelf_packing_never_overlaps_and_stays_within_the_limit() -> None:
    rng = np.random.default_rng(3)
    size = np.c_[rng.integers(1, 300, 400), rng.integers(1, 120, 400)]
    layout = pack(size, 512, 512)
    assert len(layout.sizes) > 1
    for atlas, (width, height) in enumerate(layout.sizes):
        assert width <= 512 and height <= 512
        cover = np.zeros((height, width), np.int32)
        for patch in np.flatnonzero(layout.atlas == atlas):
            x, y = layout.position[patch]
            assert x + size[patch, 0] <= width and y + size[patch, 1] <= height
            cover[y:y + size[patch, 1], x:x + size[patch, 0]] += 1
        assert cover.max() == 1
    assert sum(w * h for w, h in layout.sizes) < 1.5 * size.prod(axis=1).sum()


def test_offset_field_interpolates_across_faces_and_continues_outside() -> None:
    points = np.array([[3.0, 3.0], [60.0, 5.0], [10.0, 45.0], [62.0, 47.0]])
    triangles = np.array([[0, 1, 3], [0, 3, 2]])
    offsets = np.c_[points @ [0.5, 0.2], -points[:, 0] * 0.3, np.full(4, 7.0)].astype(np.float32)
    field = offset_field(points, triangles, offsets, (50, 66))
    rows, cols = np.mgrid[8:40, 12:55]
    expected = 0.5 * cols + 0.2 * rows
    assert np.abs(field[8:40, 12:55, 0] - expected).max() < 0.5 * 4 * 0.7
    assert np.abs(field[:, :, 2] - 7).max() < 1e-4  # a constant stays one, also outside the faces
    assert np.isfinite(field).all() and field.shape == (50, 66, 3)
