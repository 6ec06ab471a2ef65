"""Structure from motion: from the photographs to calibrated, posed cameras and sparse points in the world frame.

Steps: SIFT features at the feature quality's scale (finer for images that show too few); candidate pairs from GPS
neighbours (from image retrieval for images without a position); matching and geometric verification, weak pairs
again with a looser ratio test (sfm/database.py), and the figures of how strongly that ties the photographs
(sfm/ties.py), which name the cause when images cannot be placed; incremental or global mapping with the GPS
positions as priors (in overlapping blocks where one mapping would not fit in memory, sfm/blocks.py); georeferencing
(see sfm/georeference.py): by ground control points when gcp_list.txt is given (unless use-exif), else by the GPS
through a robust similarity and a bundle adjustment with the fixes that agree (the others reported, their
photographs kept), else a levelled local frame; then, with an earlier survey to align to, moved onto its surface
(sfm/reference.py).

Writes (see crs_offset.py for the frame): opensfm/reconstruction/ (COLMAP binary model, image names as in images/,
coloured points), opensfm/georef.json, opensfm/sparse.ply, cameras.json, odm_report/shots.geojson and the
"reconstruction" section of odm_report/stats.json.

The steps are sfm/'s (survey.py, matching.py, solve.py, record.py), which the split stage also runs per submodel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import InputError
from ..log import timed
from ..options import Option
from ..sfm.blocks import mapping_blocks
from ..sfm.cameras import LENS_CHOICES
from ..sfm.features import QUALITY_SCALES
from ..sfm.focal import FOCAL_CHOICES
from ..sfm.mapping import SFM_ALGORITHMS
from ..sfm.matching import matched
from ..sfm.record import finish
from ..sfm.reference import align_model
from ..sfm.solve import solve
from ..sfm.survey import read_survey

if TYPE_CHECKING:
    from ..pipeline import StageContext

OPTIONS: list[Option] = [
    Option("feature-quality", "enum", "high",
           "Image scale at which features are found: ultra uses the full resolution, high half of it, medium a "
           "quarter, low an eighth, lowest a sixteenth. Higher finds more and better features but takes longer.",
           "opensfm", choices=tuple(QUALITY_SCALES)),
    Option("min-num-features", "int", 10000,
           "Number of features to find in each image. More can connect images with little overlap or texture; "
           "matching time grows with it.", "opensfm", minimum=100),
    Option("matcher-neighbors", "int", 0,
           "Match each image with this many nearest images by GPS position. 0 chooses automatically (nearest "
           "images plus the triangulation graph of the positions).", "opensfm", minimum=0),
    Option("matcher-order", "int", 0,
           "Also match each image with this many images before and after it in capture order (by capture time, "
           "else file name), beside its nearest by GPS: for flights whose positions are poor or missing. 0 pairs "
           "the 2 before and after only, as always.", "opensfm", minimum=0),
    Option("sfm-algorithm", "enum", "incremental",
           "Structure from motion method: incremental adds the images one at a time (robust); global solves all "
           "camera poses at once (faster on large sets); planar lays the photographs on one ground plane from "
           "their matches and GPS, then triangulates and adjusts once (fast; for flat fields flown at one height "
           "with nadir photographs and GPS); triangulation starts from the poses the images' metadata state "
           "(GPS plus gimbal yaw, pitch and roll, as DJI records them). Planar and triangulation map "
           "incrementally instead, with a warning saying why, where their poses do not fit the photographs.",
           "opensfm", choices=SFM_ALGORITHMS),
    Option("use-exif", "bool", False,
           "Georeference with the images' GPS even when a gcp_list.txt is present.", "opensfm"),
    Option("force-gps", "bool", False,
           "Use the images' GPS positions in the reconstruction even when a gcp_list.txt is present (the ground "
           "control points still georeference the model). Useful with high-precision GPS such as RTK; without "
           "control points it changes nothing.", "opensfm"),
    Option("gps-z-offset", "float", 0.0,
           "Metres added to the altitude of every image's GPS position (not to the ground control points), for "
           "example to go from ellipsoidal to orthometric heights.", "opensfm"),
    Option("gps-accuracy", "float", 10.0,
           "Accuracy of the images' GPS positions in metres. When set, it replaces the accuracy the images "
           "declare (for example RTK); smaller values hold the model closer to the GPS positions, which can "
           "counter bowl-shaped deformation over large areas.", "opensfm", minimum=0.001),
    Option("camera-lens", "enum", "auto",
           "Camera projection model. auto uses the projection the images declare, else brown; perspective "
           "and brown are for ordinary lenses, fisheye and fisheye_opencv for fisheye lenses; spherical and "
           "equirectangular (the same) take every image twice as wide as high as a 360° panorama, cut into "
           "perspective views around its centre (auto does so for panoramas whose XMP says they are).",
           "opensfm", choices=LENS_CHOICES),
    Option("focal-refinement", "enum", "auto",
           "How bundle adjustment treats the focal length the images state: auto refines it where the views "
           "differ in direction (obliques) or height enough to measure it, and keeps the stated value where a "
           "refined one moves more than 15 % from it; fixed keeps it; free always refines it. A focal length "
           "the images do not state is always refined.", "opensfm", choices=FOCAL_CHOICES),
    Option("rolling-shutter", "bool", False,
           "Correct for a rolling shutter: photographs taken in motion by a camera that reads its sensor row by "
           "row are skewed along the flight. The tie points are moved to where a global shutter would have seen "
           "them (needs capture times) and the model adjusted again.", "opensfm"),
    Option("rolling-shutter-readout", "float", 0.0,
           "The sensor's readout time in milliseconds for rolling-shutter. 0 uses 30 ms, typical of small drone "
           "cameras; measure or look up your camera's for best results.", "opensfm", minimum=0),
    Option("cameras", "string", "",
           "Camera calibrations to start from instead of the metadata's, in the form of cameras.json (which "
           "every run writes): its content, or the name of such a file uploaded with the images. Each entry "
           "applies to the camera whose id it has, or to the only camera of its image size; bundle adjustment "
           "refines it as usual unless use-fixed-camera-params holds it.", "opensfm"),
    Option("align", "string", "",
           "An earlier survey of the site to align the outputs to: the name of a GeoTIFF DEM or LAS/LAZ point "
           "cloud uploaded with the images (an align.tif, align.las or align.laz is used without naming it). The "
           "model is georeferenced as usual, then moved and turned onto that surface, so that repeat surveys "
           "line up.", "opensfm"),
    Option("use-fixed-camera-params", "bool", False,
           "Keep the initial camera calibration instead of refining it during bundle adjustment; can help "
           "against bowl-shaped deformation.", "opensfm"),
]
WEIGHT = 4.0


def run(ctx: "StageContext") -> None:
    survey = read_survey(ctx)
    timings: dict[str, float] = {}
    with matched(ctx, survey, timings) as matching:
        model, algorithm, figures = solve(ctx, matching.database, matching.scratch, matching.settings, survey,
                                          timings, matching.ties, mapping_blocks(survey, matching.database))
    reference = ctx.project.alignment_reference(ctx.options.align)
    if ctx.options.align and reference is None:
        raise InputError(f"align: no file named {ctx.options.align!r} was uploaded with the images")
    if reference is not None:
        with timed("alignment", timings):
            figures["alignment"] = align_model(model, survey.frame, reference)
    ctx.progress(0.92)
    finish(ctx, ctx.project, survey, model, matching.camera_kinds, algorithm, figures, timings)
