"""Textured model: the full 3D mesh coloured from the photographs (ODM's mvs_texturing, which runs texrecon), each
face by the views that see it nearest and most squarely. Faces that no photograph sees whole are left out, as
texrecon does without keep-unseen-faces. The 2.5D mesh's textured model is draped with the orthophoto once there
is one (odm_postprocess).

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
from ..mesh.model import mesh_kinds
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
    Option("texturing-skip-local-seam-leveling", "bool", False, "Skip the blending of colours along the seams "
           "between photographs, in a strip of 20 texels either side: faster, but what global levelling leaves "
           "of a seam shows.", "mvs_texturing"),
    Option("texturing-keep-unseen-faces", "bool", False, "Keep the faces of the mesh that no photograph shows "
           "whole (of the 2.5D model: that the orthophoto does not show), in a flat grey, rather than leaving holes "
           "where they are.", "mvs_texturing"),
    Option("gltf", "bool", True, "Also write the textured models as binary glTF (odm_textured_model_geo.glb), "
           "the form web viewers show.", "mvs_texturing"),
]
WEIGHT = 1.0


def run(ctx: "StageContext") -> None:
    project, options = ctx.project, ctx.options
    if True not in mesh_kinds(options.use_3dmesh, options.skip_3dmodel):
        shutil.rmtree(project.texturing_dir(True), ignore_errors=True)  # no stale model of a run with other options
        log.info("skip-3dmodel: no textured model")
        project.update_stats("texturing", {"mesh": None})
        return
    cv2.setNumThreads(options.max_concurrency)
    mesh = read_mesh_ply(project.mesh(True))
    views = sparse_model(pycolmap.Reconstruction(str(project.reconstruction_dir))).views
    georef = Georef.load(project)
    levels = load_levels(project.radiometry_file)
    corrections = photometry.applied(project.photometry_file, ctx.options.photometric_correction)

    def load(view: View, scale: float) -> np.ndarray:
        image = read_scaled(project.images_dir / view.name, scale, levels)
        return image if corrections is None else corrections.correct(image, view.name)

    settings = TextureSettings(single_material=options.texturing_single_material,
                               level_seams=not options.texturing_skip_global_seam_leveling,
                               level_seams_locally=not options.texturing_skip_local_seam_leveling,
                               keep_unseen=options.texturing_keep_unseen_faces)
    log.info("Texturing the 3D mesh (%d faces) from %d images", len(mesh), len(views))
    textured, figures = texture_mesh(mesh, views, load, settings, lambda f: ctx.progress(0.8 * f))
    if figures["faces_unseen"]:
        log.info("%d of %d faces are seen whole by no image and were %s", figures["faces_unseen"], len(mesh),
                 "kept in grey" if settings.keep_unseen else "left out")
    with atomic_dir(project.texturing_dir(True)) as tmp:
        write_obj(tmp, textured, options.max_concurrency)
        ctx.progress(0.95)
        if options.gltf:
            write_glb(tmp / f"{MODEL_NAME}.glb", textured, georef.offset if georef.georeferenced else None)
    project.update_stats("texturing", {"mesh": "3d", **figures})
    log.info("Textured model: %d faces from %d images in %d atlas(es), %.2f texels per image pixel",
             figures["faces_textured"], figures["views_used"], len(figures["atlases"]), figures["texel_scale"])
    if "seam_step_before" in figures:
        log.info("Seams levelled: median colour step %.1f grey levels before, %.1f after",
                 figures["seam_step_before"], figures["seam_step_after"])
    if "seam_step_local_before" in figures:
        log.info("Seams blended along %d texels: median step %.1f grey levels before, %.1f after",
                 figures["seam_texels"], figures["seam_step_local_before"], figures["seam_step_local_after"])
