"""The meshes the textured models are made from, from the filtered point cloud (ODM's odm_meshing).

As ODM, both by default: the full 3D mesh, odm_meshing/odm_mesh.ply (Screened Poisson over the cloud, trimmed to
where there are points, simplified to mesh-size vertices), and the 2.5D mesh, odm_meshing/odm_25dmesh.ply (a height
grid of the highest points over the surveyed area, as a DSM, simplified likewise). With use-3dmesh only the 3D
one; with skip-3dmodel none. Both are in the world frame (the PLY's comments give the CRS and the offset).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pycolmap
from scipy.spatial import cKDTree

from ..cloud.boundary import Region
from ..cloud.tiled import TiledCloud
from ..crs_offset import Georef
from ..dem.grid import CellStatistic, Grid, Window
from ..dem.surface import COARSE_FACTOR, CONTEXT_CELLS, CoarseSurface, SurfaceSettings, filled_surface
from ..dense.views import sparse_model
from ..io.geojson import read_survey_area
from ..io.meshply import write_mesh_ply
from ..io.ply import read_ply
from ..log import log
from ..mesh.measure import fit, point_spacing
from ..mesh.model import Mesh, mesh_kinds
from ..mesh.poisson import Octree, oriented_normals, reconstruct, supported_depth, trim
from ..mesh.simplify import simplify
from ..mesh.surface25d import cells_inside, grid_mesh, grid_resolution, simplified
from ..options import Option

if TYPE_CHECKING:
    from ..pipeline import StageContext

OPTIONS: list[Option] = [
    Option("mesh-size", "int", 200000, "The maximum vertex count of the output mesh.", "odm_meshing", minimum=1),
    Option("mesh-octree-depth", "int", 11, "Octree depth of the Screened Poisson reconstruction of the 3D mesh: "
           "higher gives more detail and takes more time and memory. Depths finer than the point cloud's "
           "spacing supports are not used.", "odm_meshing", minimum=1, maximum=14),
    Option("use-3dmesh", "bool", False, "Build only the full 3D mesh: no 2.5D mesh (a height field seen from "
           "above) nor its textured model, odm_texturing_25d. Saves a little time.", "odm_meshing"),
    Option("skip-3dmodel", "bool", False, "Skip the textured models entirely (no mesh): saves time when only the "
           "2D products are wanted.", "odm_meshing"),
]
WEIGHT = 2.5  # both meshes: about two and a half times the texturing (bench/NOTES.md)
SHARE_3D = 0.7  # of the stage's time, when it makes both meshes
SAMPLE_POINTS = 200_000  # points drawn from the cloud for its spacing and the mesh's fit to it


def mesh_25d(ctx: "StageContext", cloud: TiledCloud, spacing: float, boundary: Region) -> tuple[Mesh, dict]:
    """The height grid of the highest points over the surveyed area as a mesh, before simplification; the
    points are binned a tile at a time."""
    resolution = grid_resolution(boundary.area, spacing, ctx.options.mesh_size)
    grid = Grid.covering(boundary.bounds, resolution)
    # Computed with a margin, as the DSM's tiles are: cells at a raster's edge lack neighbours to fill them from.
    core = Window(0, 0, grid.height, grid.width)
    padded = Window(-CONTEXT_CELLS, -CONTEXT_CELLS, grid.height + 2 * CONTEXT_CELLS, grid.width + 2 * CONTEXT_CELLS)
    coarse = CoarseSurface.of(cloud.xyz_by_tile(), grid.sub(padded).bounds, resolution * COARSE_FACTOR)
    highest = CellStatistic(grid.sub(padded), "max")
    for xyz in cloud.xyz_by_tile():
        highest.add(xyz)
    heights = filled_surface(highest.values(), grid.sub(padded), coarse, SurfaceSettings("max"))[core.inside(padded)]
    mesh = grid_mesh(grid, heights, cells_inside(grid, boundary))
    log.info("2.5D mesh: %dx%d grid at %.1f cm, %d vertices before simplification", grid.width, grid.height,
             resolution * 100, len(mesh.vertices))
    return mesh, {"grid_resolution_cm": round(resolution * 100, 2)}


def within(mesh: Mesh, boundary: Region) -> Mesh:
    """The faces whose centre lies inside the surveyed area: it need not be convex, and the plan triangulation
    would bridge its notches and the gaps between its parts."""
    inside = boundary.contains(mesh.vertices[mesh.faces].mean(axis=1)[:, :2])
    used, index = np.unique(mesh.faces[inside], return_inverse=True)
    return Mesh(mesh.vertices[used], index.reshape(-1, 3).astype(np.int32))


def mesh_3d(ctx: "StageContext", xyz: np.ndarray, spacing: float, points: cKDTree) -> tuple[Mesh, dict]:
    """The trimmed Poisson surface of the cloud, before simplification."""
    requested = ctx.options.mesh_octree_depth
    extent = float(np.ptp(xyz, axis=0).max())
    octree = Octree(min(requested, supported_depth(extent, spacing)), extent)
    if octree.depth < requested:
        log.info("Octree depth %d would make cells of %.1f cm, finer than the points' spacing of %.1f cm "
                 "supports: using depth %d (%.1f cm cells)", requested, Octree(requested, extent).cell * 100,
                 spacing * 100, octree.depth, octree.cell * 100)
    cameras = np.array([view.center for view in sparse_model(
        pycolmap.Reconstruction(str(ctx.project.reconstruction_dir))).views])
    normals = oriented_normals(xyz, cameras)
    ctx.progress(0.1)
    surface_mesh, density = reconstruct(xyz, normals, octree, ctx.options.max_concurrency)
    ctx.progress(0.6)
    trimmed = trim(surface_mesh, density, octree, points)
    log.info("3D mesh: Poisson at depth %d gave %d faces, %d left after trimming", octree.depth,
             len(surface_mesh), len(trimmed))
    return trimmed, {"octree_depth": octree.depth, "octree_depth_requested": requested,
                     "octree_cell_cm": round(octree.cell * 100, 2), "poisson_faces": len(surface_mesh),
                     "trimmed_faces": len(trimmed)}


def run(ctx: "StageContext") -> None:
    project, options = ctx.project, ctx.options
    for three_d in (False, True):
        project.mesh(three_d).unlink(missing_ok=True)  # no stale mesh from a run with other options
    kinds = mesh_kinds(options.use_3dmesh, options.skip_3dmodel)
    if not kinds:
        if options.use_3dmesh:
            log.warning("skip-3dmodel is set: use-3dmesh has no effect")
        log.info("skip-3dmodel: no mesh")
        project.update_stats("mesh", {})
        return
    georef = Georef.load(project)
    cloud = TiledCloud.open(project.filtered_cloud)
    probe = cloud.sample(SAMPLE_POINTS).astype(np.float64)
    spacing = point_spacing(cKDTree(probe), total=len(cloud))
    comments = (f"crs {georef.crs or 'none'}", f"offset {georef.offset[0]:.3f} {georef.offset[1]:.3f}")
    stats = {}
    for three_d in kinds:
        if three_d:
            # Screened Poisson solves over every point at once: the 3D mesh holds the whole cloud.
            xyz = read_ply(project.filtered_cloud).xyz.astype(np.float64)
            mesh, figures = mesh_3d(ctx, xyz, spacing, cKDTree(xyz))
            del xyz
            mesh = simplify(mesh, options.mesh_size)
        else:
            boundary = read_survey_area(project.bounds_file, georef.offset)
            mesh, figures = mesh_25d(ctx, cloud, spacing, boundary)
            mesh = within(simplified(mesh, options.mesh_size), boundary)
        write_mesh_ply(project.mesh(three_d), mesh, comments)
        distances = fit(mesh, probe)
        kind = "3d" if three_d else "2.5d"
        stats[kind] = {"vertices": len(mesh.vertices), "faces": len(mesh.faces), "max_vertices": options.mesh_size,
                       "point_spacing_cm": round(spacing * 100, 2), **figures, "point_distance": distances.as_stats()}
        log.info("%s mesh: %d vertices, %d faces; the points lie a median %.1f cm from it", kind.upper(),
                 len(mesh.vertices), len(mesh.faces), distances.median * 100)
        ctx.progress(SHARE_3D if three_d else 1.0)
    project.update_stats("mesh", stats)
