"""The 2.5D mesh's textured model, odm_texturing_25d/, draped with the orthophoto (texture/drape.py), unless
use-3dmesh or skip-3dmodel, or the orthophoto holds no colour (multispectral, thermal) or was skipped. Map tile
pyramids (MBTiles) of the orthophoto and of the elevation models, made once per run so that the
service answers tile requests with lookups: `odm_orthophoto/odm_orthophoto.mbtiles` (also the orthophoto.mbtiles
download) and `odm_dem/dsm.mbtiles`, `odm_dem/dtm.mbtiles` (colour ramp and hillshade over the real range). With
the tiles option the same tiles also go to static tile folders, as ODM's gdal2tiles writes them:
`orthophoto_tiles/`, `dsm_tiles/`, `dtm_tiles/`. With 3d-tiles, OGC 3D Tiles of the point cloud
(`3d_tiles/pointcloud/`) and of the textured model (`3d_tiles/model/`), as ODM makes them in this stage."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import rasterio
from rasterio.windows import Window

from ..atomic_files import atomic_dir
from ..cloud.octree import bounding_cube
from ..cloud.tiled_octree import octree_nodes
from ..crs_offset import Georef
from ..io.gltf import write_glb
from ..io.meshply import read_mesh_ply
from ..io.obj import MODEL_NAME, write_obj
from ..io.pointcloud import tiled_from_las
from ..log import log
from ..options import Option
from ..texture.build import MAX_ATLAS
from ..texture.drape import PixelWindow, drape
from ..tiles.pyramid import build_pyramid
from ..tiles3d.model import write_model_tiles
from ..tiles3d.pointcloud import write_cloud_tiles

if TYPE_CHECKING:
    from ..pipeline import StageContext
    from ..project import Project

OPTIONS: list[Option] = [
    Option("3d-tiles", "bool", False, "Generate OGC 3D Tiles outputs: the point cloud (3d_tiles/pointcloud) and the "
           "textured model (3d_tiles/model), for globe viewers such as CesiumJS.", "odm_postprocess"),
    Option("tiles", "bool", False, "Also write static map tiles of the orthophoto and the elevation models "
           "(orthophoto_tiles/, dsm_tiles/, dtm_tiles/: 256 px PNG tiles in TMS folders {z}/{x}/{y}.png, "
           "zoom 5 to the rasters' own).", "odm_postprocess"),
]
WEIGHT = 0.3


def tile_layers(project: "Project") -> list[tuple[str, Path, Path, bool]]:
    """(layer, raster, pyramid, is elevation) of every layer a run may have."""
    layers = [("orthophoto", project.orthophoto(), project.orthophoto("mbtiles"), False)]
    for kind in ("dsm", "dtm"):
        raster = project.dem(kind)
        layers.append((kind, raster, raster.with_suffix(".mbtiles"), True))
    return layers


def run(ctx: "StageContext") -> None:
    project = ctx.project
    three_d = ctx.options.values["3d-tiles"]
    layers = tile_layers(project)
    shutil.rmtree(project.tiles3d_dir, ignore_errors=True)  # no stale tilesets of a run with other options
    project.safe_model.unlink(missing_ok=True)
    georef = Georef.load(project)
    project.update_stats("texturing_25d", _draped_model(ctx, georef))
    figures = {}
    if not georef.georeferenced:
        log.info("The reconstruction is in a local frame: no map tiles (they need a place on the Earth)")
    for n, (layer, raster, pyramid, elevation) in enumerate(layers):
        folder = project.tiles_dir(layer)
        pyramid.unlink(missing_ok=True)  # no stale pyramid of a raster a later run did not make
        shutil.rmtree(folder, ignore_errors=True)
        if not (georef.georeferenced and raster.exists()):
            continue
        info = build_pyramid(raster, pyramid, elevation, layer, ctx.options.max_concurrency,
                             folder if ctx.options.tiles else None)
        figures[layer] = {"min_zoom": info.min_zoom, "max_zoom": info.max_zoom, "tiles": info.tiles,
                          "value_range": info.value_range}
        log.info("Tiles of the %s: zoom %d to %d, %d tiles", layer, info.min_zoom, info.max_zoom, info.tiles)
        ctx.progress((0.5 if three_d else 1.0) * (n + 1) / len(layers))
    project.update_stats("tiles", figures)
    project.update_stats("3d_tiles", _write_3d_tiles(project, georef) if three_d else None)


def _draped_model(ctx: "StageContext", georef: Georef) -> dict | None:
    """The 2.5D mesh draped with the orthophoto, and its figures; None where the run has not both in colour."""
    project, options = ctx.project, ctx.options
    folder = project.texturing_dir(False)
    shutil.rmtree(folder, ignore_errors=True)  # no stale model of a run with other options
    if not project.mesh(False).exists():
        return None  # use-3dmesh or skip-3dmodel: the meshing stage said so
    if not project.orthophoto().exists():
        log.info("No orthophoto: no 2.5D textured model, which is draped with it")
        return None
    mesh = read_mesh_ply(project.mesh(False))
    with rasterio.open(project.orthophoto()) as ortho:
        if ortho.count != 4 or ortho.dtypes[0] not in ("uint8", "uint16"):
            log.info("The orthophoto holds %d bands of %s, not colour: no 2.5D textured model", ortho.count - 1,
                     ortho.dtypes[0])
            return None
        columns, rows = ~ortho.transform * (mesh.vertices[:, 0] + georef.offset[0],
                                            mesh.vertices[:, 1] + georef.offset[1])
        depth = np.iinfo(ortho.dtypes[0]).max

        def read(window: PixelWindow) -> np.ndarray:
            rgba = ortho.read(window=Window(window.column, window.row, window.width, window.height))
            return np.moveaxis(rgba if depth == 255 else np.round(rgba / (depth / 255)), 0, -1).astype(np.uint8)

        textured = drape(mesh, np.column_stack([columns, rows]), (ortho.width, ortho.height), read, MAX_ATLAS,
                         options.texturing_keep_unseen_faces)
        resolution = ortho.res[0]
    if textured is None:
        log.warning("The orthophoto shows none of the 2.5D mesh: no 2.5D textured model")
        return None
    with atomic_dir(folder) as tmp:
        write_obj(tmp, textured, options.max_concurrency)
        if options.gltf:
            write_glb(tmp / f"{MODEL_NAME}.glb", textured, georef.offset if georef.georeferenced else None)
    log.info("2.5D textured model: %d of %d faces draped with the orthophoto at %.1f cm, %d atlas(es)",
             len(textured.faces), len(mesh), resolution * 100, len(textured.atlases))
    return {"faces": len(mesh), "faces_textured": len(textured.faces), "resolution_cm": round(resolution * 100, 2),
            "atlases": [[atlas.shape[1], atlas.shape[0]] for atlas in textured.atlases]}


def _write_3d_tiles(project: "Project", georef: Georef) -> dict | None:
    """Both tilesets (each that the run has the product for), and their figures; none in a local frame."""
    if not georef.georeferenced:
        log.info("The reconstruction is in a local frame: no 3D Tiles (they need a place on the Earth)")
        return None
    return {"pointcloud": _cloud_tiles(project, georef), "model": _model_tiles(project, georef)}


def _cloud_tiles(project: "Project", georef: Georef) -> dict | None:
    """The georeferenced LAZ (also a split survey's merged one) in an octree as the COPC's, as pnts tiles."""
    laz = project.georeferenced_model("laz")
    if not laz.exists():
        return None
    with tempfile.TemporaryDirectory(prefix="3d_tiles.", dir=project.root) as scratch:
        cloud = tiled_from_las(laz, georef.offset, Path(scratch) / "cloud.ply", Path(scratch))
        if not len(cloud):
            return None
        cube = bounding_cube(np.array(cloud.box, dtype=np.float64))
        with atomic_dir(project.tiles3d("pointcloud")) as folder:
            made = write_cloud_tiles(folder, octree_nodes(cloud, cube, Path(scratch)), cube, georef.crs,
                                     georef.offset)
    log.info("3D Tiles of the point cloud: %d points in %d tiles, %d levels", made.points, made.tiles, made.depth + 1)
    return {"tiles": made.tiles, "points": made.points, "depth": made.depth}


def _model_tiles(project: "Project", georef: Georef) -> dict | None:
    glb = project.texturing_dir(True) / f"{MODEL_NAME}.glb"
    if not glb.exists():
        log.info("No textured model in glTF (skip-3dmodel, or gltf off): no 3D Tiles of the model")
        return None
    with atomic_dir(project.tiles3d("model")) as folder:
        model = write_model_tiles(folder, glb, georef.crs, project.safe_model)
    log.info("3D Tiles of the textured model: %d vertices, %.0f x %.0f x %.0f m", model.vertices, *model.size)
    return {"vertices": model.vertices, "size_m": model.size, "tiles": model.tiles, "levels": model.levels}
