"""Textured model: the meshing stage's mesh coloured from the photographs (ODM's mvs_texturing, which runs
texrecon). The 2.5D mesh is textured in nadir mode (views that see a face from above win, so the model agrees
with the orthophoto); the 3D mesh (use-3dmesh) by the views that see each face nearest and most squarely. Faces
that no photograph sees whole are left out, as texrecon does without keep-unseen-faces.

Writes odm_texturing/odm_textured_model_geo.obj and .mtl with its atlases (PNG, at most 8192 px a side) and, with
gltf, odm_texturing/odm_textured_model_geo.glb; nothing with skip-3dmodel. The method is in aeromap_engine/texture.
"""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING

import cv2
import numpy as np
import pycolmap

from .. import photometry
from ..atomic_files import atomic_dir
from ..crs_offset import Georef
from ..dense.views import View, sparse_model
from ..io.gltf import write_glb
from ..io.images import load_levels, read_scaled
from ..io.meshply import read_mesh_ply
from ..io.obj import MODEL_NAME, write_obj
from ..log import log
from ..options import Option
from ..texture.build import TextureSettings, texture_mesh

if TYPE_CHECKING:
    from ..pipeline import StageContext

OPTIONS: list[Option] = [
    Option("texturing-single-material", "bool", False, "Pack the whole texture into one material (one atlas of at "
           "most 8192 px a side), at a coarser texel size if need be. Some viewers handle one material better.",
           "mvs_texturing"),
    Option("texturing-skip-global-seam-leveling", "bool", False, "Skip the levelling of colours across the seams "
           "between photographs: faster, but exposure differences between images then show as steps.",
           "mvs_texturing"),
    Option("gltf", "bool", True, "Also write the textured model as binary glTF (odm_textured_model_geo.glb), the "
           "form web viewers show.", "mvs_texturing"),
]
WEIGHT = 1.0


def run(ctx: "StageContext") -> None:
    project, options = ctx.project, ctx.options
    if options.skip_3dmodel:
        shutil.rmtree(project.texturing_dir, ignore_errors=True)  # no stale model from a run with other options
        log.info("skip-3dmodel: no textured model")
        project.update_stats("texturing", {"mesh": None})
        return
    cv2.setNumThreads(options.max_concurrency)
    three_d = options.use_3dmesh
    mesh = read_mesh_ply(project.mesh(three_d))
    views = sparse_model(pycolmap.Reconstruction(str(project.reconstruction_dir))).views
    georef = Georef.load(project)
    levels = load_levels(project.radiometry_file)
    corrections = photometry.applied(project.photometry_file, ctx.options.photometric_correction)

    def load(view: View, scale: float) -> np.ndarray:
        image = read_scaled(project.images_dir / view.name, scale, levels)
        return image if corrections is None else corrections.correct(image, view.name)

    settings = TextureSettings(nadir=not three_d, single_material=options.texturing_single_material,
                               level_seams=not options.texturing_skip_global_seam_leveling)
    log.info("Texturing the %s mesh (%d faces) from %d images", "3D" if three_d else "2.5D", len(mesh), len(views))
    textured, figures = texture_mesh(mesh, views, load, settings, lambda f: ctx.progress(0.8 * f))
    if figures["faces_unseen"]:
        log.info("%d of %d faces are seen whole by no image and were left out", figures["faces_unseen"], len(mesh))
    with atomic_dir(project.texturing_dir) as tmp:
        write_obj(tmp, textured, options.max_concurrency)
        ctx.progress(0.95)
        if options.gltf:
            write_glb(tmp / f"{MODEL_NAME}.glb", textured, georef.offset if georef.georeferenced else None)
    project.update_stats("texturing", {"mesh": "3d" if three_d else "2.5d", **figures})
    log.info("Textured model: %d faces from %d images in %d atlas(es), %.2f texels per image pixel",
             figures["faces_textured"], figures["views_used"], len(figures["atlases"]), figures["texel_scale"])
    if "seam_step_before" in figures:
        log.info("Seams levelled: median colour step %.1f grey levels before, %.1f after",
                 figures["seam_step_before"], figures["seam_step_after"])
