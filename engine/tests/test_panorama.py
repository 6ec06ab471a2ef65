"""360° panoramas: the equirectangular projection, the faces cut from a panorama (each pixel where its pinhole
ray says), which images count as panoramas, the faces' metadata, and pairing by station."""

from __future__ import annotations

import contextlib
import io
import json
import math
from pathlib import Path

import numpy as np
import pytest
from PIL import ExifTags, Image

from aeromap_engine.io.exif import exif_tags, photo_from_metadata, xmp_packet, xmp_tags
from aeromap_engine.io.exif_write import write_gps
from aeromap_engine import pipeline
from aeromap_engine.panorama.faces import FACES, equirectangular_pixels, equirectangular_rays, face_size
from aeromap_engine.project import Project
from aeromap_engine.panorama.split import face_name, is_panorama, split
from aeromap_engine.sfm.cameras import camera_kind
from aeromap_engine.sfm.pairs import candidate_pairs

WIDTH = 720


def test_the_projection_puts_the_front_in_the_middle_and_the_nadir_at_the_bottom() -> None:
    forward, right, down, back = np.array([[0, 0, 1.0], [1.0, 0, 0], [0, 1.0, 0], [0, 0, -1.0]])
    cols_rows = equirectangular_pixels(np.stack([forward, right, down, back]), WIDTH, WIDTH // 2)
    assert cols_rows[0] == pytest.approx([WIDTH / 2 - 0.5, WIDTH / 4 - 0.5])
    assert cols_rows[1] == pytest.approx([3 * WIDTH / 4 - 0.5, WIDTH / 4 - 0.5])
    assert cols_rows[2][1] == pytest.approx(WIDTH / 2 - 0.5)
    assert cols_rows[3][0] % WIDTH == pytest.approx(WIDTH - 0.5) or cols_rows[3][0] == pytest.approx(-0.5)


def test_rays_and_pixels_are_inverse() -> None:
    rays = equirectangular_rays(WIDTH, WIDTH // 2)
    rows, cols = np.mgrid[0:WIDTH // 2, 0:WIDTH]
    pixels = equirectangular_pixels(rays, WIDTH, WIDTH // 2)
    assert np.allclose(pixels[..., 0], cols, atol=1e-6) and np.allclose(pixels[..., 1], rows, atol=1e-6)
    assert np.allclose(np.linalg.norm(rays, axis=-1), 1.0)


def test_faces_are_rotations_that_look_five_ways() -> None:
    axes = []
    for rotation in FACES.values():
        assert np.allclose(rotation.T @ rotation, np.eye(3)) and np.linalg.det(rotation) == pytest.approx(1.0)
        axes.append(rotation[:, 2])
    assert {tuple(np.round(a).astype(int)) for a in axes} == {(0, 0, 1), (1, 0, 0), (0, 0, -1), (-1, 0, 0),
                                                             (0, 1, 0)}
    # The down face's top looks to the front, as a drone's nadir photograph looks ahead.
    assert FACES["down"] @ np.array([0.0, -1.0, 0.0]) == pytest.approx([0.0, 0.0, 1.0])


def _coded_panorama(path: Path, width: int = WIDTH, xmp: bool = True) -> None:
    """A panorama whose red channel codes the longitude and green the latitude, with a GPS fix and GPano's XMP."""
    height = width // 2
    rows, cols = np.mgrid[0:height, 0:width].astype(np.float64)
    pixels = np.zeros((height, width, 3), np.uint8)
    pixels[..., 0] = np.round((cols + 0.5) / width * 250)
    pixels[..., 1] = np.round((rows + 0.5) / height * 250)
    pixels[..., 2] = 128
    exif = Image.Exif()
    exif[ExifTags.Base.Make] = "Insta360"
    exif[ExifTags.Base.Model] = "X3"
    exif.get_ifd(ExifTags.IFD.Exif)[ExifTags.Base.DateTimeOriginal] = "2025:06:14 10:30:00"
    exif.get_ifd(ExifTags.IFD.Exif)[ExifTags.Base.FocalLength] = 1.5
    write_gps(exif, 9.02, 45.81, 270.0)
    extra = {"xmp": b'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-'
                    b'syntax-ns#"><rdf:Description GPano:ProjectionType="equirectangular" xmlns:GPano="http://ns.'
                    b'google.com/photos/1.0/panorama/"/></rdf:RDF></x:xmpmeta>'} if xmp else {}
    Image.fromarray(pixels).save(path, "PNG" if path.suffix == ".png" else "JPEG", quality=100, exif=exif, **extra)


def test_each_face_pixel_shows_the_panorama_where_its_ray_points(tmp_path: Path) -> None:
    panorama = tmp_path / "R0010001.png"
    _coded_panorama(panorama)
    names = split(panorama, tmp_path)
    assert names == [face_name(panorama.name, face) for face in FACES]
    size = face_size(WIDTH)
    assert size == 2 * round(WIDTH / math.pi / 2)
    for face, name in zip(FACES, names):
        pixels = np.asarray(Image.open(tmp_path / name).convert("RGB")).astype(np.float64)
        assert pixels.shape == (size, size, 3)
        # The ray of each pixel, worked out here from the pinhole (focal length half the side) and the rotation.
        rows, cols = np.mgrid[0:size, 0:size].astype(np.float64)
        half = (size - 1) / 2
        rays = np.stack([(cols - half) / (size / 2), (rows - half) / (size / 2), np.ones_like(cols)], -1)
        world = rays @ FACES[face].T
        longitude = np.arctan2(world[..., 0], world[..., 2])
        latitude = np.arctan2(-world[..., 1], np.hypot(world[..., 0], world[..., 2]))
        expected_red = (longitude + math.pi) / (2 * math.pi) * 250
        expected_green = (math.pi / 2 - latitude) / math.pi * 250
        # Away from the seam at ±180° (where the code wraps from 250 to 0) and the nadir (where longitude turns).
        away = (np.abs(np.abs(longitude) - math.pi) > 0.05) & (latitude > -1.4)
        assert np.median(np.abs(pixels[..., 0] - expected_red)[away]) <= 1.0, face
        assert np.median(np.abs(pixels[..., 1] - expected_green)[away]) <= 1.0, face


def test_faces_keep_the_position_and_declare_a_pinhole(tmp_path: Path) -> None:
    panorama = tmp_path / "PANO.jpg"
    _coded_panorama(panorama)
    name = split(panorama, tmp_path)[0]
    data = (tmp_path / name).read_bytes()
    size = face_size(WIDTH)
    photo = photo_from_metadata(name, size, size, exif_tags(data), xmp_tags(xmp_packet(data)))
    assert (photo.longitude, photo.latitude, photo.altitude) == pytest.approx((9.02, 45.81, 270.0), abs=1e-6)
    assert photo.focal_ratio == pytest.approx(0.5) and photo.camera_projection == "perspective"
    assert photo.camera_make == "Insta360" and photo.utc_time is not None
    for lens in ("auto", "spherical"):
        kind = camera_kind(photo, lens)
        assert (kind.projection, kind.focal_known) == ("perspective", True)


def test_which_images_are_panoramas(tmp_path: Path) -> None:
    declared, plain = tmp_path / "declared.jpg", tmp_path / "plain.jpg"
    _coded_panorama(declared)
    _coded_panorama(plain, xmp=False)
    photo = tmp_path / "photo.jpg"
    Image.new("RGB", (400, 300)).save(photo)
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"\xff\xd8 not really")
    assert [is_panorama(p, "auto") for p in (declared, plain, photo, broken)] == [True, False, False, False]
    assert [is_panorama(p, "spherical") for p in (declared, plain, photo, broken)] == [True, True, False, False]
    assert is_panorama(plain, "equirectangular") and not is_panorama(declared, "brown")


def test_views_of_one_station_pair_with_every_view_of_the_neighbours() -> None:
    # Five stations 20 m apart on a line, five views at each: the views' own nearest neighbours would be
    # the other views of their station.
    stations = np.repeat(np.c_[np.arange(5) * 20.0, np.zeros(5)], 5, axis=0)
    pairs = set(candidate_pairs(stations, list(range(25)), neighbors=2))
    station = np.arange(25) // 5
    linked = {(station[a], station[b]) for a, b in pairs}
    assert {(0, 1), (1, 2), (2, 3), (3, 4)} <= linked
    for s, t in ((0, 1), (2, 2), (3, 4)):
        assert all((a, b) in pairs for a in range(5 * s, 5 * s + 5) for b in range(5 * t, 5 * t + 5) if a < b)
    assert (0, 20) not in pairs  # 80 m apart, beyond the two nearest stations


def test_the_dataset_takes_the_views_instead_of_the_panoramas(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.images_dir.mkdir()
    for index in range(2):
        _coded_panorama(project.images_dir / f"PANO_{index}.jpg")
    # A panorama cut short where its pixels begin: its header says it is one, its pixels cannot be read.
    broken = tmp_path / "broken.jpg"
    _coded_panorama(broken)
    data = broken.read_bytes()
    (project.images_dir / "PANO_cut.jpg").write_bytes(data[:data.find(b"\xff\xda")])
    options = [{"name": "end-with", "value": "dataset"}]
    with contextlib.redirect_stdout(io.StringIO()):
        pipeline.run(project, options)
    names = sorted(image["filename"] for image in json.loads(project.images_json.read_text()))
    assert names == sorted(face_name(f"PANO_{i}.jpg", face) for i in range(2) for face in FACES)
    rejected = project.read_stats()["dataset"]["images_rejected"]
    assert list(rejected) == ["PANO_cut.jpg"] and "its pixels cannot be read" in rejected["PANO_cut.jpg"]
    (project.images_dir / "PANO_cut.jpg").unlink()
    # Run again as plain photographs: the views written before are gone, the panoramas are photographs again.
    with contextlib.redirect_stdout(io.StringIO()):
        pipeline.run(project, options + [{"name": "camera-lens", "value": "brown"}, {"name": "rerun-all",
                                                                                    "value": True}])
    assert sorted(p.name for p in project.images_dir.iterdir()) == ["PANO_0.jpg", "PANO_1.jpg"]
    assert sorted(image["filename"] for image in json.loads(project.images_json.read_text())) == \
        ["PANO_0.jpg", "PANO_1.jpg"]
