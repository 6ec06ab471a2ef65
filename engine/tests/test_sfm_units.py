"""Pure pieces of the dataset and SfM stages: metadata parsing, ODM file formats, CRS handling, pair selection,
alignment geometry and camera conversion, on synthetic inputs with known answers."""

from __future__ import annotations

from fractions import Fraction

import cv2
import numpy as np
import pycolmap
import pytest
from PIL import Image, ImageOps

from aeromap_engine import pipeline
from aeromap_engine.geo import parse_crs, utm_crs
from aeromap_engine.io.exif import photo_from_metadata, xmp_tags
from aeromap_engine.io.gcp import parse_gcp_list
from aeromap_engine.quality import gps_agreement, height_range, nadir_views
from aeromap_engine.sfm import alignment
from aeromap_engine.sfm.consistency import (GpsVerdict, fix_spacing, judge_fixes, layout_uncertainty,
                                            settling_fixes, settling_runs)
from aeromap_engine.io.geotxt import parse_geo_txt
from aeromap_engine.sfm.alignment import (apply, best_per_cell, gravity_direction, is_collinear, levelling_transform,
                                          robust_similarity)
from aeromap_engine.sfm.cameras import Refinement, camera_kind, odm_camera, refinement
from aeromap_engine.sfm.database import PairMatches, PositionPrior, may_overlap
from aeromap_engine.sfm.control import stored_pixel
from aeromap_engine.sfm.frame import barometric_heights, heights_surveyed
from aeromap_engine.sfm.georeference import align_to_gps
from aeromap_engine.sfm.levelling import fit_and_apply
from aeromap_engine.sfm.features import extract_features, process_size, process_sizes, root_sift_bytes
from aeromap_engine.sfm.pairs import candidate_pairs
from aeromap_engine.sfm.ties import footprint_short_sides, measure_ties, neighbour_overlap
from aeromap_engine.photo import Photo

DJI_XMP = """<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF><rdf:Description
 drone-dji:RelativeAltitude="+39.80" drone-dji:GimbalRollDegree="+0.00" drone-dji:GimbalYawDegree="-135.20"
 drone-dji:GimbalPitchDegree="-60.00" drone-dji:FlightYawDegree="+46.00" drone-dji:RtkStdLon="0.012"
 drone-dji:RtkStdLat="0.018" drone-dji:RtkStdHgt="0.031"/>
 <Camera:GPSZAccuracy>9</Camera:GPSZAccuracy></rdf:RDF></x:xmpmeta>"""


def rational(x: float) -> Fraction:
    return Fraction(x).limit_denominator(10_000)


def test_exif_gps_and_dji_xmp() -> None:
    exif = {"Make": "DJI\x00\x00", "Model": "FC6310", "GPSLatitude": (rational(33), rational(51), rational(30.6)),
            "GPSLatitudeRef": "S", "GPSLongitude": (rational(151), rational(12), rational(36)),
            "GPSLongitudeRef": "E", "GPSAltitude": rational(12.5), "GPSAltitudeRef": b"\x01",
            "FocalLength": rational(8.8), "FocalLengthIn35mmFilm": 24,
            "DateTimeOriginal": "2024:03:01 10:00:00", "SubsecTimeOriginal": "25", "OffsetTimeOriginal": "+10:00"}
    photo = photo_from_metadata("a.jpg", 5472, 3648, exif, xmp_tags(DJI_XMP))
    assert photo.camera_make == "DJI"
    assert photo.latitude == pytest.approx(-(33 + 51 / 60 + 30.6 / 3600))
    assert photo.longitude == pytest.approx(151 + 12 / 60 + 36 / 3600)
    assert photo.altitude == pytest.approx(-12.5)  # reference 1: below sea level
    assert photo.relative_altitude == pytest.approx(39.8)
    assert (photo.yaw, photo.pitch, photo.roll) == (pytest.approx(-135.2), pytest.approx(30.0), 0.0)
    assert photo.gps_xy_stddev == pytest.approx(0.018) and photo.gps_z_stddev == pytest.approx(0.031)
    assert photo.focal_ratio == pytest.approx(24 / 36)
    assert photo.utc_time == pytest.approx(1709251200000.0 + 250.0)  # 00:00:00.25 UTC


def test_rtk_deviations_without_an_rtk_solution_are_not_its_accuracy() -> None:
    """DJI writes RTK deviations with RtkFlag 16 (single point) too: they are not the fix's accuracy then."""
    single = photo_from_metadata("a.jpg", 100, 100, {}, xmp_tags(DJI_XMP.replace("RtkStdHgt", 'RtkFlag="16" x')))
    fixed = photo_from_metadata("a.jpg", 100, 100, {}, xmp_tags(DJI_XMP.replace("RtkStdHgt", 'RtkFlag="50" x')))
    assert single.gps_z_stddev == 9 and fixed.gps_xy_stddev == pytest.approx(0.018)


def test_barometer_replaces_only_imprecise_gps_heights() -> None:
    """A flight at 140 m whose RTK fix (3 cm) is lost for its last three photographs, GPS heights 3 m off there,
    its barometer drifting 0.2 m a photograph: the RTK heights are kept, the others come from the barometer
    levelled on them."""
    drift = 0.2 * np.arange(6)
    photos = [Photo(f"{i}.jpg", 100, 100, latitude=45.0, longitude=-92.0, altitude=0.0, relative_altitude=40.0 + d,
                    utc_time=1000.0 * i, gps_z_stddev=0.03 if i < 3 else None) for i, d in enumerate(drift)]
    positions = np.c_[np.zeros((6, 2)), [140.0, 140.0, 140.0, 143.0, 137.0, 143.0]]
    heights = barometric_heights(photos, positions)[:, 2]
    assert heights[:3] == pytest.approx([140.0] * 3)
    assert heights[3:] == pytest.approx(140.0 - 0.2 + drift[3:])  # the zero: the median RTK height less its drift


def test_exif_without_position_or_focal() -> None:
    exif = {"GPSLatitude": (0, 0, 0), "GPSLatitudeRef": "N", "GPSLongitude": (0, 0, 0), "GPSLongitudeRef": "E",
            "FocalLength": rational(4.5), "FocalPlaneXResolution": rational(1000), "FocalPlaneResolutionUnit": 4}
    photo = photo_from_metadata("b.jpg", 6000, 4000, exif, {})
    assert not photo.has_gps  # (0, 0) is what receivers without a fix write
    assert photo.sensor_width == pytest.approx(6.0) and photo.focal_ratio == pytest.approx(4.5 / 6.0)
    assert photo_from_metadata("c.jpg", 100, 100, {}, {}).focal_ratio == 0.85
    halved = photo_from_metadata("d.jpg", 3000, 2000, {**exif, "ExifImageWidth": 6000}, {})
    assert halved.sensor_width == pytest.approx(6.0) and halved.focal_ratio == pytest.approx(4.5 / 6.0)


def test_xmp_attributes_and_elements() -> None:
    tags = xmp_tags('<x:xmpmeta a:One="1" b:Two = "two"><c:Three>3.5</c:Three></x:xmpmeta>')
    assert tags == {"a:One": "1", "b:Two": "two", "c:Three": "3.5"}


@pytest.mark.parametrize("text, epsg", [("WGS84 UTM 30N", 32630), ("wgs84 utm 7s", 32707), ("EPSG:32615", 32615),
                                        ("+proj=utm +zone=17 +datum=WGS84 +units=m +no_defs", 32617)])
def test_crs_declarations(text: str, epsg: int) -> None:
    assert parse_crs(text).to_epsg() == epsg


def test_bad_crs_and_utm_zones() -> None:
    with pytest.raises(ValueError):
        parse_crs("somewhere nice")
    assert utm_crs(-92.0, 46.8).to_epsg() == 32615
    assert utm_crs(151.2, -33.9).to_epsg() == 32756
    assert utm_crs(180.0, 10.0).to_epsg() == 32601  # the antimeridian wraps to zone 1


def test_gcp_list_groups_observations() -> None:
    gcps = parse_gcp_list("EPSG:32630\n# comment\n"
                          "500000 4000000 100 10 20 a.jpg p1\n500000 4000000 100 30 40 b.jpg p1\n"
                          "500010 4000010 101 1 2 a.jpg\n500010 4000010 101 3 4 c.jpg\n")
    assert gcps.crs.to_epsg() == 32630
    assert [len(p.observations) for p in gcps.points] == [2, 2]
    assert gcps.points[0].name == "p1" and gcps.points[0].observations[1].pixel == (30.0, 40.0)
    with pytest.raises(ValueError, match="line 2"):
        parse_gcp_list("EPSG:32630\n1 2 3 a.jpg\n")
    with pytest.raises(ValueError, match="two different"):
        parse_gcp_list("EPSG:32630\n1 2 3 4 5 a.jpg p\n1 2 9 4 5 b.jpg p\n")



@pytest.mark.parametrize("orientation", range(1, 9))
def test_upright_pixels_map_to_the_stored_layout(orientation: int) -> None:
    """A pixel marked on the photograph as a viewer shows it (Pillow applying the EXIF orientation) is the
    stored pixel that holds the same mark."""
    stored = np.zeros((30, 50), dtype=np.uint8)
    stored[7, 41] = 255  # row 7, column 41
    image = Image.fromarray(stored)
    exif = image.getexif()
    exif[0x0112] = orientation
    image.info["exif"] = exif.tobytes()
    upright = np.asarray(ImageOps.exif_transpose(image))
    row, column = np.argwhere(upright == 255)[0]
    assert stored_pixel((float(column), float(row)), orientation, 50, 30) == pytest.approx((41.0, 7.0))


def test_control_heights_all_alike_are_not_surveyed() -> None:
    flat = parse_gcp_list("EPSG:32611\n1 2 0 4 5 a.jpg p\n3 4 0 4 5 a.jpg q\n5 1 0 4 5 a.jpg r\n")
    surveyed = parse_gcp_list("EPSG:32611\n1 2 0 4 5 a.jpg p\n3 4 0.4 4 5 a.jpg q\n5 1 0 4 5 a.jpg r\n")
    assert not heights_surveyed(flat.points) and heights_surveyed(surveyed.points)


def test_checkpoints_are_read_from_the_column_after_the_name() -> None:
    gcps = parse_gcp_list("EPSG:32611\n1 2 0 4 5 a.jpg p\n3 4 0.4 4 5 a.jpg q check\n3 4 0.4 6 7 b.jpg q check\n"
                          "5 1 0 4 5 a.jpg r Checkpoint extra\n6 1 0 4 5 a.jpg s other\n")
    assert {p.name: p.check for p in gcps.points} == {"p": False, "q": True, "r": True, "s": False}
    with pytest.raises(ValueError, match="point q is a checkpoint on some lines, not on others"):
        parse_gcp_list("EPSG:32611\n3 4 0.4 4 5 a.jpg q check\n3 4 0.4 6 7 b.jpg q\n")

def test_geo_txt_optional_columns() -> None:
    geo = parse_geo_txt("EPSG:4326\na.jpg 10.5 45.25\nb.jpg 10.6 45.3 120 90 0 0 0.5 1.5\n")
    assert geo.entries["a.jpg"].z is None and geo.entries["a.jpg"].horizontal_accuracy is None
    assert geo.entries["b.jpg"].yaw == 90 and geo.entries["b.jpg"].vertical_accuracy == 1.5


def grid(rows: int, cols: int, spacing: float) -> np.ndarray:
    return np.array([[c * spacing, r * spacing] for r in range(rows) for c in range(cols)], dtype=float)


def test_pairs_link_neighbours_not_far_corners() -> None:
    positions = grid(6, 6, 20.0)
    pairs = set(candidate_pairs(positions, list(range(36)), 0))
    for i in range(36):  # every image reaches its neighbours along and across flight lines
        assert (i, i + 1) in pairs or i % 6 == 5
        assert (i, i + 6) in pairs or i >= 30
    assert (0, 35) not in pairs
    assert len(pairs) < 36 * 35 / 2 / 3


def test_pairs_small_sets_and_no_gps() -> None:
    assert len(candidate_pairs(grid(3, 3, 10.0), list(range(9)), 0)) == 36  # every pair
    unknown = np.full((20, 2), np.nan)
    assert len(candidate_pairs(unknown, list(range(20)), 0)) == 190
    many = np.full((100, 2), np.nan)
    pairs = candidate_pairs(many, list(range(100)), 0)
    assert (0, 1) in pairs and (0, 50) not in pairs
    explicit = candidate_pairs(grid(6, 6, 20.0), list(range(36)), 3)
    partners = np.bincount(np.array(explicit).ravel(), minlength=36)
    assert partners.min() >= 3


def random_rotation(rng: np.random.Generator) -> np.ndarray:
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    return q * np.sign(np.linalg.det(q))


def test_robust_similarity_ignores_wild_fixes() -> None:
    rng = np.random.default_rng(3)
    model = rng.uniform(-5, 5, size=(30, 3)) * [1, 1, 0.1]
    truth = pycolmap.Sim3d(7.5, pycolmap.Rotation3d(random_rotation(rng)), np.array([100.0, -40.0, 250.0]))
    world = apply(truth, model) + rng.normal(scale=0.3, size=(30, 3))
    world[[4, 17]] += [[60.0, 0, 0], [0, -35.0, 20.0]]
    fit = robust_similarity(model, world, max_error=30.0)
    assert list(np.flatnonzero(~fit.inliers)) == [4, 17]
    assert fit.transform.scale == pytest.approx(7.5, rel=0.01)
    check = rng.uniform(-5, 5, size=(5, 3))
    assert np.abs(apply(fit.transform, check) - apply(truth, check)).max() < 0.5


def test_robust_similarity_is_least_squares_when_every_fix_agrees() -> None:
    """The best triple of least median of squares leans with its three fixes' noise; when every fix agrees,
    the fit is that of all of them."""
    rng = np.random.default_rng(4)
    model = grid_survey(rng)
    world = model + rng.normal(0, 1.0, model.shape) * [1.5, 1.5, 3.0]
    fit = robust_similarity(model, world, max_error=30.0)
    assert fit.inliers.all()
    assert np.allclose(fit.transform.matrix(), pycolmap.estimate_sim3d(model, world).matrix(), atol=1e-9)


def test_corridor_alignment_keeps_the_roll_about_the_line() -> None:
    rng = np.random.default_rng(5)
    line = np.column_stack([np.linspace(0, 10, 15), np.zeros(15), np.zeros(15)])
    assert is_collinear(line)
    yaw, slope = np.deg2rad(30.0), np.deg2rad(4.0)  # the world line heads 30 degrees off and climbs
    turn = np.array([[np.cos(yaw), -np.sin(yaw), 0], [np.sin(yaw), np.cos(yaw), 0], [0, 0, 1]])
    climb = np.array([[np.cos(slope), 0, -np.sin(slope)], [0, 1, 0], [np.sin(slope), 0, np.cos(slope)]])
    rotation = turn @ climb
    world = (3.0 * line @ rotation.T + [10, 20, 30]) + rng.normal(scale=0.02, size=(15, 3))
    world[6] += [0.0, 25.0, 0.0]  # a wild fix beside the line
    fit = robust_similarity(line, world, max_error=30.0, mode="line")
    assert not fit.inliers[6] and fit.inliers.sum() == 14
    matrix = np.asarray(fit.transform.matrix())
    assert fit.transform.scale == pytest.approx(3.0, rel=0.01)
    assert np.allclose(matrix[:, :3] / fit.transform.scale, rotation, atol=0.01)  # no roll about the line


def test_levelled_fit_ignores_drifting_heights() -> None:
    rng = np.random.default_rng(8)
    levelled = np.column_stack([rng.uniform(0, 100, 40), rng.uniform(0, 60, 40), rng.normal(0, 0.2, 40)])
    yaw = np.deg2rad(-70.0)
    turn = np.array([[np.cos(yaw), -np.sin(yaw), 0], [np.sin(yaw), np.cos(yaw), 0], [0, 0, 1]])
    world = 0.5 * levelled @ turn.T + [500.0, 300.0, 120.0]
    world[:, 2] += np.linspace(0, 40, 40)  # a barometer drifting 40 m over the flight
    fit = robust_similarity(levelled, world, max_error=30.0, mode="level")
    matrix = np.asarray(fit.transform.matrix())
    assert fit.inliers.all() and fit.transform.scale == pytest.approx(0.5, rel=1e-3)
    assert np.allclose(matrix[:, :3] / 0.5, turn, atol=1e-3)  # heading only, no tilt towards the drift
    assert matrix[2, 3] == pytest.approx(140.0, abs=1.0)  # the median height


def tilted_views(tilt: np.ndarray, views: list[tuple[float, float]], centres: np.ndarray | None = None
                 ) -> pycolmap.Reconstruction:
    """A model of cameras at the given (heading, pitch from nadir) in degrees and world centres (the origin by
    default), its frame turned by `tilt` against the world's."""
    model = pycolmap.Reconstruction()
    camera = pycolmap.Camera.create_from_model_name(1, "SIMPLE_PINHOLE", 500.0, 640, 480)
    model.add_camera_with_trivial_rig(camera)
    for i, (heading, pitch) in enumerate(views):
        # World from camera: look down (camera z = world -Z) at the pitch from nadir, turned to the heading.
        p, h = np.deg2rad(pitch), np.deg2rad(heading)
        look_down = np.array([[1, 0, 0], [0, -1, 0], [0, 0, -1]], dtype=float)
        pitch_up = np.array([[1, 0, 0], [0, np.cos(p), -np.sin(p)], [0, np.sin(p), np.cos(p)]])
        turn = np.array([[np.cos(h), -np.sin(h), 0], [np.sin(h), np.cos(h), 0], [0, 0, 1]])
        world_from_camera = turn @ look_down @ pitch_up
        camera_from_model = (tilt @ world_from_camera).T
        centre = tilt @ (centres[i] if centres is not None else np.zeros(3))
        cam_from_model = pycolmap.Rigid3d(pycolmap.Rotation3d(camera_from_model), -camera_from_model @ centre)
        model.add_image_with_trivial_frame(pycolmap.Image(name=f"{i}.jpg", camera_id=1, image_id=i + 1),
                                           cam_from_model)
    return model


def test_levelling_uses_viewing_directions_and_pitch() -> None:
    tilt = random_rotation(np.random.default_rng(11))  # the model's frame is tilted against the world
    views = [(0, 0), (90, 0), (180, 20), (270, 45)]
    down = gravity_direction(tilted_views(tilt, views), {f"{i}.jpg": float(p) for i, (_, p) in enumerate(views)})
    assert np.allclose(down, tilt @ [0, 0, -1], atol=1e-6)
    level = levelling_transform(down)
    assert np.allclose(apply(level, down[None])[0], [0, 0, -1], atol=1e-9)


def test_levelling_finds_obliques_that_state_no_pitch() -> None:
    """Twelve nadir views and eight looking north 60 degrees from nadir, none stating its pitch (most non-DJI
    cameras): taken all for nadir they would tilt the model by 23 degrees; the obliques are found by their axes
    and the model is level. A rig of four obliques all round and one nadir stays level too."""
    tilt = random_rotation(np.random.default_rng(12))
    one_way = tilted_views(tilt, [(30.0 * i, 0.0) for i in range(12)] + [(0.0, 60.0)] * 8)
    assert np.allclose(gravity_direction(one_way, {}), tilt @ [0, 0, -1], atol=1e-6)
    rig = tilted_views(tilt, [(0.0, 0.0)] + [(90.0 * i, 45.0) for i in range(4)])
    assert np.allclose(gravity_direction(rig, {}), tilt @ [0, 0, -1], atol=1e-6)


def grid_survey(rng: np.random.Generator) -> np.ndarray:
    """40 camera centres on five flight lines 15 m apart, 50 m above the ground, as a 100 m survey flies them."""
    x, y = np.meshgrid(np.linspace(0.0, 60.0, 5), np.linspace(0.0, 80.0, 8))
    return np.column_stack([x.ravel(), y.ravel(), np.full(x.size, 50.0)]) + rng.normal(0, 0.3, (x.size, 3))


def fitted_tilt_deg(views: list[tuple[float, float]], vertical_noise_m: float, seed: int) -> float:
    """The angle between the world's vertical and the vertical of a tilted model of `views` over grid_survey
    once fit_and_apply has laid it on fixes with 1.5 m of horizontal noise and the given vertical noise, the
    views stating no pitch."""
    rng = np.random.default_rng(seed)
    centres = grid_survey(rng)
    model = tilted_views(random_rotation(rng), views, centres)
    names = [f"{i}.jpg" for i in range(len(views))]
    source = np.array([model.find_image_with_name(n).projection_center() for n in names])
    fixes = centres + rng.normal(0, 1.0, centres.shape) * [1.5, 1.5, vertical_noise_m] + [4e5, 5e6, 300.0]
    fit = fit_and_apply(model, source, fixes, 30.0, {}, trust_heights=False)
    assert fit is not None
    # The first view's axis, at its pitch in the world, says in the fitted model how far the model leans.
    axis = model.find_image_with_name(names[0]).viewing_direction()
    return float(np.degrees(np.arccos(np.clip(-axis[2], -1.0, 1.0))))


def test_nadir_views_level_a_model_that_noisy_gps_heights_would_tilt() -> None:
    """40 nadir views that state no pitch (EXIF GPS only) over fixes with 3 m of vertical noise: the heights
    alone lean the model by about a degree (the noise over the layout leaves 1.4 degrees of uncertainty); the
    views level it. With decimetre heights (RTK, a barometer) the heights level it, as before."""
    nadir = [(180.0 * (i // 8 % 2), 0.0) for i in range(40)]
    assert fitted_tilt_deg(nadir, 3.0, seed=21) < 0.01
    assert fitted_tilt_deg(nadir, 0.1, seed=21) > 0.01  # the heights' fit, not the views'
    assert fitted_tilt_deg(nadir, 0.1, seed=21) < 0.2


def test_views_that_state_no_pitch_and_look_one_way_do_not_level() -> None:
    """A camera fixed 20 degrees forward, flown one way, stating no pitch: its views average 20 degrees from
    the vertical, which the heights plainly contradict; the heights keep the model within a few degrees."""
    forward = [(0.0, 20.0)] * 40
    assert fitted_tilt_deg(forward, 3.0, seed=22) == pytest.approx(20.0, abs=4.0)


def test_rtk_heights_level_a_model_whose_views_lean() -> None:
    """40 views that the gimbal says look straight down but that lean 4 degrees in the model (a weak model's
    bend, a gimbal's offset), over exact fixes: heights stated at 3 cm (RTK) level the model, each camera at its
    fix's height; stated at metres, the gimbal angles level it and the cameras leave their heights by metres."""
    rng = np.random.default_rng(23)
    centres = grid_survey(rng)
    names = [f"{i}.jpg" for i in range(len(centres))]
    pitch = {name: 0.0 for name in names}
    offset = np.array([4e5, 5e6, 300.0])
    height_errors = {}
    for stddev in (0.03, 3.0):
        model = tilted_views(random_rotation(rng), [(0.0, 4.0)] * len(names), centres)
        priors = {n: PositionPrior(c + offset, stddev, stddev) for n, c in zip(names, centres)}
        assert align_to_gps(model, priors, pitch) is not None
        height_errors[stddev] = max(abs(model.find_image_with_name(n).projection_center()[2] - priors[n].position[2])
                                    for n in names)
    assert height_errors[0.03] < 0.01
    assert height_errors[3.0] > 1.0


def test_odm_camera_normalisation() -> None:
    camera = pycolmap.Camera.create_from_model_name(1, "OPENCV", 3000.0, 4000, 3000)
    camera.params = [3000.0, 3010.0, 2020.0, 1490.0, -0.1, 0.02, 0.001, -0.002]
    odm = odm_camera(camera, "brown")
    assert odm["focal_x"] == pytest.approx(0.75) and odm["focal_y"] == pytest.approx(3010 / 4000)
    assert odm["c_x"] == pytest.approx(20 / 4000) and odm["c_y"] == pytest.approx(-10 / 4000)
    assert (odm["k1"], odm["p2"], odm["k3"]) == (pytest.approx(-0.1), pytest.approx(-0.002), 0.0)
    radial = pycolmap.Camera.create_from_model_name(1, "RADIAL", 2000.0, 4000, 2250)
    radial.params = [2800.0, 2000.0, 1125.0, -0.03, 0.01]
    assert odm_camera(radial, "perspective") == {"projection_type": "perspective", "width": 4000, "height": 2250,
                                                  "focal": 0.7, "k1": -0.03, "k2": 0.01}


def test_camera_kinds() -> None:
    photo = Photo("a.jpg", 4000, 3000, "DJI", "FC6310", focal_ratio=0.7)
    assert camera_kind(photo, "auto").colmap_model == "OPENCV"  # brown, as ODM
    assert camera_kind(photo, "auto").projection == "brown"
    assert camera_kind(photo, "fisheye_opencv").colmap_model == "OPENCV_FISHEYE"
    photo.camera_projection = "fisheye"
    assert camera_kind(photo, "auto").colmap_model == "RADIAL_FISHEYE"
    assert camera_kind(photo, "auto").odm_id == "v2 dji fc6310 4000 3000 fisheye 0.7"


def test_mapping_refines_the_focal_length_when_guessed_or_freed() -> None:
    stated = camera_kind(Photo("a.jpg", 4000, 3000, "DJI", "FC6310", focal_length_35mm=24.0), "auto")
    guessed = camera_kind(Photo("b.jpg", 640, 480, "", "", focal_length=4.5), "auto")  # no sensor width
    assert stated.focal_known and not guessed.focal_known
    assert refinement([stated], fixed=False, free_focal=False) == Refinement(focal=False, distortion=True)
    assert refinement([stated], fixed=False, free_focal=True) == Refinement(focal=True, distortion=True)
    assert refinement([stated, guessed], fixed=False, free_focal=False) == Refinement(focal=True, distortion=True)
    assert refinement([stated, guessed], fixed=True, free_focal=True) == Refinement(focal=False, distortion=False)


def test_feature_scales_and_descriptors() -> None:
    assert process_size(4000, "high") == 2000 and process_size(4000, "ultra") == 4000
    assert process_size(4000, "lowest") == 320  # 270 px would leave too little to match
    assert process_sizes(640, "high") == [320, 640]  # a thermal frame that shows too few is read in full
    assert process_sizes(4000, "high") == [2000]  # finer would take four times the memory
    assert process_sizes(4000, "low") == [500, 1000, 2000]
    assert process_sizes(1000, "ultra") == [1000]
    d = root_sift_bytes(np.array([[4.0] * 128, [0.0] * 127 + [9.0]], dtype=np.float32))
    assert d.dtype == np.uint8 and d[0, 0] == round(512 * np.sqrt(1 / 128)) and d[1, -1] == 255


def test_keypoints_land_on_full_resolution_pixels() -> None:
    """A dark blob centred on full-resolution pixel (300, 200) of an 800 x 600 frame, seen at half size, must
    come out at COLMAP's (300.5, 200.5): COLMAP puts the first pixel's centre at 0.5."""
    v, u = np.mgrid[0:600, 0:800]
    frame = 200 - 150 * np.exp(-((u - 300) ** 2 + (v - 200) ** 2) / (2 * 12.0 ** 2))
    half = cv2.resize(frame.astype(np.float32), (400, 300), interpolation=cv2.INTER_AREA)
    features = extract_features(np.clip(half, 0, 255).astype(np.uint8), (800, 600), 50)
    xy = features.keypoints[:, :2]
    nearest = xy[np.argmin(np.linalg.norm(xy - [300.5, 200.5], axis=1))]
    assert np.allclose(nearest, [300.5, 200.5], atol=0.3)
    assert features.descriptors.shape == (len(features), 128)


def test_sfm_options_are_declared_for_the_opensfm_stage() -> None:
    specs = {o.name: o for o in pipeline.all_options()}
    for name in ("feature-quality", "min-num-features", "matcher-neighbors", "sfm-algorithm", "use-exif",
                 "gps-accuracy", "camera-lens", "use-fixed-camera-params", "force-gps", "gps-z-offset",
                 "matcher-order", "cameras"):
        assert specs[name].stage == "opensfm"
    for name in ("sm-no-align", "split-image-groups"):
        assert specs[name].stage == "split"
    assert specs["feature-quality"].default == "high" and specs["min-num-features"].default == 10000
    assert set(specs["sfm-algorithm"].choices) == {"incremental", "global", "planar", "triangulation"}
    assert specs["matcher-order"].default == 0 and specs["sm-no-align"].default is False
    assert specs["cameras"].type == specs["split-image-groups"].type == "string"


def test_layout_uncertainty_matches_plane_fits_to_noisy_heights() -> None:
    """The predicted tilt uncertainty is the spread of the slopes that least squares fits through heights with
    that noise (Monte Carlo), and a line of fixes leaves the tilt across it undetermined."""
    grid = np.array([(x, y) for x in range(0, 100, 10) for y in range(0, 40, 10)], dtype=float)
    expected = layout_uncertainty(grid, horizontal_rmse_m=1.5 * np.sqrt(2), vertical_rmse_m=3.3)
    rng = np.random.default_rng(0)
    design = np.c_[grid - grid.mean(axis=0), np.ones(len(grid))]
    slopes = np.array([np.linalg.lstsq(design, rng.normal(0, 3.3, len(grid)), rcond=None)[0][1]
                       for _ in range(4000)])  # across the narrow (40 m) side, the weakest direction
    assert expected.tilt_deg == pytest.approx(np.degrees(np.arctan(slopes.std())), rel=0.05)
    scales = []
    for _ in range(2000):
        noisy = grid + rng.normal(0, 1.5, grid.shape)
        a, b = grid - grid.mean(axis=0), noisy - noisy.mean(axis=0)
        scales.append(np.sum(a * b) / np.sum(a * a) - 1)
    assert expected.scale == pytest.approx(np.std(scales), rel=0.1)
    line = np.c_[np.arange(0, 100, 10.0), np.zeros(10)]
    assert layout_uncertainty(line, 1.0, 1.0).tilt_deg == 90.0


def test_least_median_alignment_names_wild_fixes_and_keeps_noisy_ones() -> None:
    """Nine positions with 0.5 m noise, two of them 30 m off: the two are named and the similarity is that of
    the others. With six positions and no wild one, none is named (the small-sample correction: a similarity
    fits three of six exactly, so their median residual understates the noise)."""
    rng = np.random.default_rng(4)
    source = rng.uniform(-50, 50, (9, 3)) * [1, 1, 0.05]
    truth = pycolmap.Sim3d(2.0, pycolmap.Rotation3d(np.array([0.0, 0.0, 0.7])), np.array([500.0, 100.0, 40.0]))
    target = apply(truth, source) + rng.normal(0, 0.5, source.shape)
    target[[2, 6]] += [21.2, 21.2, 0.0]
    fit = robust_similarity(source, target, max_error=30.0)
    assert fit is not None and np.flatnonzero(~fit.inliers).tolist() == [2, 6]
    assert np.abs(apply(fit.transform, source) - apply(truth, source)).max() < 1.5
    six = robust_similarity(source[:6], apply(truth, source[:6]) + rng.normal(0, 0.5, (6, 3)), max_error=30.0)
    assert six is not None and six.inliers.all()


def test_height_range_of_a_surface_against_its_cameras() -> None:
    """Ground 40 m below nadir cameras passes; a surface reaching above them, or a fold 200 m below, fails;
    obliques may see above themselves (a hillside)."""
    rng = np.random.default_rng(0)
    ground = np.c_[rng.uniform(0, 100, (1000, 2)), rng.normal(0, 2, 1000)]
    cameras = np.array([(x, y, 40.0) for x in range(5, 100, 20) for y in range(10, 100, 25)])
    assert height_range(ground, cameras, True, "DSM", "dsm").passed
    above = np.r_[ground, ground[:50] + [0, 0, 300]]
    failed = height_range(above, cameras, True, "DSM", "dsm")
    assert not failed.passed and failed.fatal and "no survey from those cameras" in failed.message
    assert height_range(above, cameras, False, "DSM", "dsm").passed
    assert not height_range(np.r_[ground, ground[:50] - [0, 0, 200]], cameras, True, "DSM", "dsm").passed
    assert not height_range(ground + [0, 0, 60], cameras, True, "DSM", "dsm").passed  # above the cameras altogether
    down, tilted = np.array([[0.0, 0.0, -1.0]] * 5), np.array([[0.0, 0.8, -0.6]] * 5)
    assert nadir_views(down) and not nadir_views(tilted)


def terrain_following_survey(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A slope rising 400 m over 800 m (a mountainside, an open-pit wall) and cameras 60 m above it every 30 m:
    the surface (N, 3) and the cameras (M, 3)."""
    xy = rng.uniform(0, 800, (20_000, 2)) * [1, 0.25]
    surface = np.c_[xy, 0.5 * xy[:, 0] + rng.normal(0, 1, len(xy))]
    cameras = np.array([(x, y, 0.5 * x + 60.0) for x in range(15, 800, 30) for y in range(15, 200, 30)])
    return surface, cameras


def test_height_range_follows_the_terrain_under_each_camera() -> None:
    """A terrain-following flight 60 m above a 400 m slope is possible (the surface lies 340 m below the
    median ground at the foot of the slope); the same survey with a strip of it buried 300 m below where it
    lies (a fold) is not."""
    surface, cameras = terrain_following_survey(np.random.default_rng(1))
    slope = height_range(surface, cameras, True, "DSM", "dsm")
    assert slope.passed, slope.message
    buried = surface.copy()
    buried[(buried[:, 0] > 300) & (buried[:, 0] < 400), 2] -= 300.0
    folded = height_range(buried, cameras, True, "DSM", "dsm")
    assert not folded.passed and folded.fatal and folded.value > 50


def test_fix_spacing_is_the_median_nearest_neighbour_distance() -> None:
    line = np.c_[np.arange(0.0, 100.0, 14.0), np.zeros(8)]
    assert fix_spacing(line) == pytest.approx(14.0) and fix_spacing(line[:1]) == 0.0


def test_the_best_point_of_each_image_cell_is_the_longest_tracked_then_the_most_accurate() -> None:
    # (image, cell, track length, error, point): image 0 cell 3 has a longer track (point 12) than point 11;
    # image 0 cell 4 ties on length and point 14's error is smaller; point 12 is the best of two cells.
    images = np.array([0, 0, 0, 0, 1, 1])
    cells = np.array([3, 3, 4, 4, 3, 7])
    lengths = np.array([2, 5, 3, 3, 5, 2])
    errors = np.array([0.1, 0.9, 0.5, 0.2, 0.9, 0.4])
    points = np.array([11, 12, 13, 14, 12, 15])
    assert best_per_cell(images, cells, lengths, errors, points).tolist() == [12, 14, 15]
    assert best_per_cell(images[:0], cells[:0], lengths[:0], errors[:0], points[:0]).tolist() == []


NADIR = np.diag([1.0, -1.0, -1.0])  # a camera looking straight down, its image's top to the north


def nadir_survey(rng: np.random.Generator) -> tuple[pycolmap.Reconstruction, np.ndarray, dict[int, np.ndarray]]:
    """30 nadir photographs from 100 m over gently rolling ground (GSD 12.5 cm) and 20,000 ground points seen with
    0.3 px of noise: the model as structure from motion might leave it (cameras 0.3 m and points 0.1 m off), the
    true camera centres, and each model point's true position."""
    camera = pycolmap.Camera(model="SIMPLE_RADIAL", width=1000, height=750, params=[800.0, 500.0, 375.0, 0.01],
                             camera_id=1)
    xy = rng.uniform(-40, 165, (20_000, 2))
    ground = np.c_[xy, 2 * np.sin(xy[:, 0] / 30) + np.cos(xy[:, 1] / 25)]
    centres = np.array([[25.0 * i, 25.0 * j, 100.0] for i in range(6) for j in range(5)])
    model = pycolmap.Reconstruction()
    model.add_camera_with_trivial_rig(camera)
    tracks = [pycolmap.Track() for _ in ground]
    for image_id, centre in enumerate(centres, start=1):
        pixels = camera.img_from_cam((ground - centre) @ NADIR.T)
        seen = np.flatnonzero((pixels[:, 0] > 2) & (pixels[:, 0] < camera.width - 2) & (pixels[:, 1] > 2)
                               & (pixels[:, 1] < camera.height - 2))  # inside, noise included
        found = centre + rng.normal(0, 0.3, 3)
        model.add_image_with_trivial_frame(
            pycolmap.Image(name=f"{image_id}.jpg", keypoints=pixels[seen] + rng.normal(0, 0.3, (len(seen), 2)),
                           camera_id=1, image_id=image_id),
            pycolmap.Rigid3d(pycolmap.Rotation3d(NADIR), -NADIR @ found))
        for index, point in enumerate(seen):
            tracks[point].add_element(image_id, index)
    truth = {}
    for xyz, track in zip(ground, tracks):
        if track.length() >= 2:
            truth[model.add_point3D(xyz + rng.normal(0, 0.1, 3), track)] = xyz
    return model, centres, truth


# In `make test-long` (CI's time): the memory plan's own units stay in `make test`.
@pytest.mark.long
def test_an_adjustment_too_large_for_memory_on_covering_points_is_as_good_as_the_whole(monkeypatch) -> None:
    """Above ADJUSTED_OBSERVATIONS, the cameras are adjusted with the points that cover every image and the other
    points afterwards with the cameras held: against the truth, as close as the whole adjustment."""
    rng = np.random.default_rng(5)
    model, centres, truth = nadir_survey(rng)
    priors = {f"{i}.jpg": PositionPrior(c + rng.normal(0, 0.1, 3), 0.1, 0.1) for i, c in enumerate(centres, start=1)}
    observations = model.compute_num_observations()
    covering = alignment.covering_points(model)
    kept = sum(model.point3D(i).track.length() for i in covering)
    assert kept < 0.1 * observations
    for image in model.images.values():  # every image keeps points wherever it sees any, at least
        def cells(points: list) -> set[tuple[int, int]]:
            return {(int(p.xy[0] // 125), int(p.xy[1] // 125)) for p in points}

        observed = image.get_observation_points2D()
        assert cells([p for p in observed if p.point3D_id in covering]) == cells(observed)

    def errors(limit: int) -> tuple[float, float]:
        monkeypatch.setattr(alignment, "ADJUSTED_OBSERVATIONS", limit)
        monkeypatch.setattr(alignment, "POINT_CHUNK_OBSERVATIONS", 20_000)  # several chunks of points
        adjusted = pycolmap.Reconstruction(model)
        alignment.adjust_with_priors(adjusted, priors, Refinement(focal=False, distortion=True), 2)
        cameras = [np.linalg.norm(adjusted.find_image_with_name(f"{i}.jpg").projection_center() - c)
                   for i, c in enumerate(centres, start=1)]
        points = [np.linalg.norm(adjusted.point3D(i).xyz - xyz) for i, xyz in truth.items()]
        return float(np.mean(cameras)), float(np.median(points))

    whole, bounded = errors(observations), errors(observations // 10)
    assert whole[0] < 0.06  # the cameras within half the GSD, from 0.3 m off
    assert bounded[0] < 1.3 * whole[0] and bounded[1] < 1.3 * whole[1]


def survey_layout(rng: np.random.Generator) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Forty cameras on five serpentine lines of eight (20 m apart along a line, 30 m between lines) at 40 m,
    in capture order: their names, their true positions and the same layout in a model's own frame."""
    rows = [[(x if line % 2 == 0 else 140 - x, 30.0 * line) for x in range(0, 160, 20)] for line in range(5)]
    truth = np.array([[x, y, 40.0] for row in rows for x, y in row])
    to_model = pycolmap.Sim3d(0.12, pycolmap.Rotation3d(random_rotation(rng)), np.array([3.0, -1.0, 2.0]))
    return [f"IMG_{i:02d}.JPG" for i in range(len(truth))], truth, apply(to_model, truth)


def placed_by_gps(names: list[str], model: np.ndarray, fixes: np.ndarray, accuracy: float = 10.0
                  ) -> tuple[np.ndarray, GpsVerdict]:
    """What georeferencing makes of a model and its fixes: the robust similarity's placement of the cameras and
    the verdict on the fixes (one flight, in the names' order)."""
    fit = robust_similarity(model, fixes, max_error=3.0 * accuracy)
    placed = apply(fit.transform, model)
    priors = {n: PositionPrior(xyz, accuracy, accuracy) for n, xyz in zip(names, fixes)}
    distances = {n: float(np.linalg.norm(c[:2] - f[:2])) for n, c, f in zip(names, placed, fixes)}
    wild = [n for n, agrees in zip(names, fit.inliers) if not agrees]
    return placed, judge_fixes(distances, priors, wild, [names])


def test_a_settling_receiver_places_the_model_and_is_named() -> None:
    """The first fourteen fixes 80 m off and closing in to 40 m (a receiver settling after take-off), the rest 4 m
    of noise: the others place the model within their noise, and the drifting fixes are named as settling, not
    held against the layout, though more than a quarter of the fixes disagree with it."""
    rng = np.random.default_rng(11)
    names, truth, model = survey_layout(rng)
    fixes = truth + np.column_stack([rng.normal(scale=4.0 / np.sqrt(2), size=(40, 2)), np.zeros(40)])
    drift = np.linspace(80.0, 40.0, 14)
    fixes[:14] += np.column_stack([0.6 * drift, 0.8 * drift, np.zeros(14)])
    placed, verdict = placed_by_gps(names, model, fixes)
    assert verdict.wild == names[:len(verdict.wild)] and len(verdict.wild) > 10
    assert verdict.settling == verdict.wild and verdict.layout_matches
    assert np.median(np.linalg.norm(placed - truth, axis=1)[14:]) < 2.5


def test_a_line_flown_the_other_way_a_few_metres_aside_still_describes_the_layout() -> None:
    """Half a metre of noise, and two of the five lines (the serpentine's return legs) 2.5 m back along their
    direction, as a lagging receiver puts them: the similarity may leave them out of the placement, but they
    are within their 10 m accuracy and far less than the 20 m between photographs, so the fixes describe the
    layout; the same fixes moved to the next photograph along the line (a geotagging offset) do not."""
    rng = np.random.default_rng(13)
    names, truth, model = survey_layout(rng)
    fixes = truth + np.column_stack([rng.normal(scale=0.5, size=(40, 2)), np.zeros(40)])
    returning = [i for i in range(40) if (i // 8) in (1, 3)]
    fixes[returning, 0] += 2.5  # return legs fly towards -x: a late fix lies behind, towards +x
    _, verdict = placed_by_gps(names, model, fixes)
    assert verdict.layout_matches and set(verdict.wild) <= set(verdict.close)
    shifted = np.roll(truth, 1, axis=0) + np.column_stack([rng.normal(scale=0.5, size=(40, 2)), np.zeros(40)])
    _, wrong = placed_by_gps(names, model, shifted)
    assert not wrong.layout_matches


def test_a_constant_offset_moves_the_model_and_keeps_its_shape() -> None:
    """Every fix 25 m east of its camera: the similarity carries the offset (no fix disagrees, the shape is the
    model's), which is what GPS alone can say."""
    rng = np.random.default_rng(12)
    names, truth, model = survey_layout(rng)
    placed, verdict = placed_by_gps(names, model, truth + [25.0, 0.0, 0.0])
    assert verdict.wild == [] and verdict.layout_matches and verdict.median_residual_m < 1e-6
    assert np.allclose(placed - truth, [25.0, 0.0, 0.0], atol=1e-6)


def test_two_wild_fixes_among_forty_are_named_and_not_settling() -> None:
    rng = np.random.default_rng(13)
    names, truth, model = survey_layout(rng)
    fixes = truth + np.column_stack([rng.normal(scale=1.0, size=(40, 2)), np.zeros(40)])
    fixes[[9, 27]] += [[80.0, 0.0, 0.0], [0.0, -80.0, 0.0]]
    placed, verdict = placed_by_gps(names, model, fixes)
    assert sorted(verdict.wild) == [names[9], names[27]] and verdict.settling == []
    assert verdict.layout_matches and verdict.agreeing == 38
    assert np.linalg.norm(placed - truth, axis=1).max() < 2.0


def test_fixes_of_other_photographs_do_not_match_the_layout() -> None:
    """The fixes shuffled among the photographs: no similarity lays the model onto them, so the verdict refuses
    the placement; and the gps_agreement check that follows from it is fatal."""
    rng = np.random.default_rng(14)
    names, truth, model = survey_layout(rng)
    _, verdict = placed_by_gps(names, model, truth[rng.permutation(40)])
    assert not verdict.layout_matches
    check = gps_agreement(verdict.agreeing, verdict.located, verdict.accuracy_m)
    assert check.fatal and not check.passed and "do not describe the photographs' layout" in check.message


def test_a_drift_that_grows_is_not_a_settling_receiver() -> None:
    """Fixes that open the flight wild but move further off (not a receiver converging) stay wild."""
    flights = [["a", "b", "c", "d", "e"]]
    distances = {"a": 30.0, "b": 45.0, "c": 60.0, "d": 1.0, "e": 2.0}
    assert settling_fixes(flights, distances, {"a", "b", "c"}) == []
    assert settling_fixes(flights, {**distances, "a": 90.0}, {"a", "b", "c"}) == ["a", "b", "c"]
    assert settling_fixes(flights, distances, {"b", "c"}) == []  # the flight opens with an agreeing fix


def test_a_settling_receivers_run_reaches_past_the_fixes_left_out_while_they_stay_far() -> None:
    """Two fixes left out open the flight; the next ones that still lie far beyond the others' typical distance
    (6 m here: 2.5 times that is 15 m), closer one by one, belong to the run; the first within reach ends it."""
    flights = [["a", "b", "c", "d", "e", "f", "g"], ["h", "i", "j"]]
    distances = {"a": 50.0, "b": 37.0, "c": 27.0, "d": 17.0, "e": 5.0, "f": 6.0,
                 "g": 6.0, "h": 5.0, "i": 7.0, "j": 6.0}
    assert settling_runs(flights, distances, {"a", "b"}) == {"a", "b", "c", "d"}
    assert settling_runs(flights, {**distances, "c": 40.0}, {"a", "b"}) == {"a", "b"}  # moving off again
    assert settling_runs(flights, distances, {"b"}) == set()  # opened by an agreeing fix
    assert settling_runs(flights, {**distances, "b": 45.0, "c": 44.0, "d": 44.0}, {"a", "b"}) == set()  # no nearer



def test_overlap_of_neighbouring_photographs() -> None:
    """Photographs 12 m apart along a line, each footprint 48 m on its short side: 75 % overlap; unknown
    positions or heights are left out, and fewer than two known give no estimate."""
    xy = np.array([[0.0, 12.0 * i] for i in range(5)] + [[np.nan, np.nan]])
    sides = np.array([48.0] * 5 + [48.0])
    assert neighbour_overlap(xy, sides) == pytest.approx(0.75)
    assert neighbour_overlap(xy, np.array([48.0, np.nan, np.nan, np.nan, np.nan, 48.0])) is None
    assert neighbour_overlap(xy * 10, sides) == 0.0  # 120 m apart: none
    thermal = Photo(filename="t.jpg", width=640, height=512, relative_altitude=95.0, focal_ratio=1.6111)
    assert footprint_short_sides([thermal, Photo(filename="n.jpg", width=640, height=512)])[0] == \
        pytest.approx(95.0 * 512 / (1.6111 * 640))
    assert np.isnan(footprint_short_sides([Photo(filename="n.jpg", width=640, height=512)])[0])


def test_ties_name_the_measured_cause() -> None:
    ties = measure_ties({"a.jpg": 6000, "b.jpg": 5400, "c.jpg": 7500}, [74, 12, 30, 0], 6, 15, 0.75)
    assert (ties.features_median, ties.features_fewest, ties.poorest_image) == (6000, 5400, "b.jpg")
    assert (ties.overlapping_pairs, ties.candidate_pairs, ties.matches_median) == (2, 6, 52.0)
    assert "fewest 5400 (b.jpg)" in ties.describe() and "about 75%" in ties.describe()
    assert ties.advice("high", 10000).startswith("too little texture to match: try feature-quality ultra and "
                                                 "min-num-features 20000")
    sparse = measure_ties({"a.jpg": 9000, "b.jpg": 9000}, [400], 1, 15, 0.3)
    assert sparse.advice("ultra", 10000).startswith("too little overlap: fly again with more overlap")
    blurred = measure_ties({"a.jpg": 160, "b.jpg": 130}, [3], 1, 15, None)
    assert blurred.advice("ultra", 10000).startswith("too little texture: the photographs show 145 features "
                                                     "where 10000 were wanted")
    assert "none of 1 candidate pairs verified" in blurred.describe()
    assert "nearest neighbour" not in blurred.describe()


def _matched(inliers: int) -> PairMatches:
    geometry = pycolmap.TwoViewGeometry()
    geometry.inlier_matches = np.zeros((inliers, 2), dtype=np.uint32)
    return PairMatches(np.zeros((max(inliers, 40), 2), dtype=np.uint32), geometry)


def test_weak_pairs_are_matched_again_only_where_they_may_overlap() -> None:
    """Of the weak pairs of images without positions, only those with some verified matches or a third image
    that both overlap; every weak pair of two located cameras (neighbours by GPS)."""
    matched = {("a", "b"): _matched(300), ("b", "c"): _matched(250), ("c", "d"): _matched(20),
               ("a", "e"): _matched(0)}
    weak = [("a", "c"), ("c", "d"), ("a", "e"), ("a", "f"), ("e", "f")]
    assert may_overlap(weak, matched, set(), 100) == [("a", "c"), ("c", "d")]
    assert may_overlap(weak, matched, {"e", "f"}, 100) == [("a", "c"), ("c", "d"), ("e", "f")]
