"""Benchmark: the full 3D mesh of a synthetic scene of buildings against its truth, walls included.

    engine/.venv/bin/python bench/mesh_walls.py [--work DIR]

The survey (100 m, six buildings, 800x600 photographs from 30 m with the camera tilted 25 degrees forward along
north-south lines, RTK positions) is rendered, processed with use-3dmesh to the textured model, and the mesh is
compared with the scene's height field: the distance from the mesh's vertices to the true surface (the truth DSM's
cell centres joined by two triangles a cell, as the scene's bilinear height field, walls included), and from the
true points on the walls the tilted camera sees (those facing north and south) to the mesh, in GSD. The target
(issue 40): vertices within 1.5 GSD of the truth (median), walls present.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import rasterio
from rasterio.windows import from_bounds

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "engine"))

from aeromap_engine import pipeline  # noqa: E402
from aeromap_engine.crs_offset import Georef  # noqa: E402
from aeromap_engine.dem.grid import Grid  # noqa: E402
from aeromap_engine.io.meshply import read_mesh_ply  # noqa: E402
from aeromap_engine.mesh.measure import point_distances  # noqa: E402
from aeromap_engine.mesh.model import Mesh  # noqa: E402
from aeromap_engine.mesh.surface25d import grid_mesh  # noqa: E402
from aeromap_engine.project import Project  # noqa: E402
from aeromap_engine.synthetic import FlightSpec, LensSpec, SceneSpec, SurveySpec, generate  # noqa: E402

WALLS_SURVEY = SurveySpec(
    scene=SceneSpec(size_m=100.0, buildings=6, trees=4, roads=1, relief_m=2.0),
    lens=LensSpec(width=800, height=600),
    flight=FlightSpec(height_m=30.0, forward_overlap=0.8, side_overlap=0.7, oblique_pitch_deg=25.0),
    gps_sigma_horizontal_m=0.02,  # RTK: what is measured is the mesh's shape, not a GPS's bias
    gps_sigma_vertical_m=0.03,
    seed=5,
)
OPTIONS = [{"name": "use-3dmesh", "value": True}, {"name": "end-with", "value": "mvs_texturing"},
           {"name": "pc-quality", "value": "high"}, {"name": "mesh-octree-depth", "value": 11},
           {"name": "mesh-size", "value": 400000}, {"name": "feature-quality", "value": "ultra"}]
WALL_STEP = 1.0  # m: neighbouring cells of the truth this much apart in height have a wall between them


def surface_points(dsm: Path, stride: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Points on the true surface (CRS) every `stride` cells of the truth DSM: the cells' tops, and columns down
    the walls between neighbours along north-south (the walls the tilted camera sees); the walls' points apart."""
    with rasterio.open(dsm) as source:
        z = source.read(1).astype(np.float64)[::stride, ::stride]
        transform = source.transform * source.transform.scale(stride, stride)
    rows, cols = np.mgrid[0:z.shape[0], 0:z.shape[1]]
    x, y = transform * (cols + 0.5, rows + 0.5)
    tops = np.c_[x.ravel(), y.ravel(), z.ravel()]
    cell = abs(transform.e)
    walls = []
    step = np.abs(np.diff(z, axis=0))
    for r, c in zip(*np.nonzero(step > WALL_STEP)):
        low, high = sorted((z[r, c], z[r + 1, c]))
        for height in np.arange(low + cell, high - cell / 2, cell):
            walls.append((x[r, c], (y[r, c] + y[r + 1, c]) / 2, height))
    return tops, np.array(walls)


def truth_surface(dsm: Path, offset: np.ndarray, low: np.ndarray, high: np.ndarray) -> Mesh:
    """The true surface between `low` and `high` (CRS) in the project's frame: the truth DSM's cell centres joined
    by two triangles a cell, which is the scene's bilinear height field to within millimetres (its walls are ramps
    one cell wide). Distances to sampled points instead would add up to half their spacing to every vertex."""
    with rasterio.open(dsm) as source:
        transform = source.transform
        window = from_bounds(*low, *high, transform=transform).round_offsets().round_lengths()
        z = source.read(1, window=window).astype(np.float64)
    west, north = transform * (window.col_off, window.row_off)
    grid = Grid(west - offset[0], north - offset[1], transform.a, z.shape[1], z.shape[0])
    return grid_mesh(grid, z, np.ones(z.shape, bool))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=None, help="kept afterwards (default: a temporary folder)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="aeromap-walls-") as scratch:
        work = args.work or Path(scratch)
        truth = generate(work / "survey", WALLS_SURVEY, workers=2)
        project = Project(work / "project")
        shutil.rmtree(project.root, ignore_errors=True)
        shutil.copytree(truth.images_dir, project.images_dir)
        with contextlib.redirect_stdout(io.StringIO()):
            pipeline.run(project, OPTIONS)
        mesh = read_mesh_ply(project.mesh(three_d=True))
        offset = np.array([*Georef.load(project).offset, 0.0])
        tops, walls = surface_points(truth.dsm)
        vertices = mesh.vertices.astype(np.float64) + offset
        low, high = tops[:, :2].min(axis=0) + 5, tops[:, :2].max(axis=0) - 5
        inside = ((vertices[:, :2] > low) & (vertices[:, :2] < high)).all(axis=1)
        to_truth = point_distances(truth_surface(truth.dsm, offset, low - 1, high + 1), vertices[inside] - offset,
                                   reach=10.0)
        seen = walls[((walls[:, :2] > vertices[:, :2].min(axis=0) + 5)
                      & (walls[:, :2] < vertices[:, :2].max(axis=0) - 5)).all(axis=1)]
        on_mesh = point_distances(mesh, seen - offset, reach=10.0)
        gsd = truth.gsd_m
        print(f"mesh: {len(mesh.vertices)} vertices; to the true surface: median {np.median(to_truth) / gsd:.2f} GSD "
              f"(target 1.5), 90th percentile {np.percentile(to_truth, 90) / gsd:.2f} GSD")
        print(f"walls: {len(seen)} true points on walls facing the flight lines: median {np.median(on_mesh) / gsd:.2f}"
              f" GSD from the mesh, {np.mean(on_mesh < 3 * gsd) * 100:.0f} % within 3 GSD (GSD {gsd * 100:.1f} cm)")


if __name__ == "__main__":
    main()
