"""RAW photographs (io/raw.py): Brighton Beach's photographs written as DNGs here, as a camera writes them (one
16-bit Bayer mosaic of the scene's linear light, the camera's colour matrix and white balance, EXIF with the GPS
and DJI's XMP), are developed with their colours and mapped as the JPEGs are: every photograph placed at its own
fix."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import ExifTags, Image
from PIL.TiffImagePlugin import IFDRational, ImageFileDirectory_v2

from aeromap_engine import pipeline
from aeromap_engine.io.images import read_layout, read_stored
from test_hard_surveys import TRUE_FIX_M
from test_sfm import SFM, SUBSET, exif_utm, make_project, model_centres, stats

# XYZ (D65) to linear sRGB: as the DNG's ColorMatrix1, the camera's own space is linear sRGB.
XYZ_TO_SRGB = ((3.2406, -1.5372, -0.4986), (-0.9689, 1.8758, 0.0415), (0.0557, -0.2040, 1.0570))


def _linear(srgb: np.ndarray) -> np.ndarray:
    v = srgb / 255.0
    return np.where(v <= 0.04045, v / 12.92, ((v + 0.055) / 1.055) ** 2.4)


def write_dng(jpeg: Path, dng: Path) -> None:
    """The JPEG's scene as a DNG: its light linearised and mosaicked (RGGB) in 16 bits, with its EXIF, GPS and XMP."""
    with Image.open(jpeg) as image:
        rgb, exif, xmp = np.asarray(image.convert("RGB"), np.float64), image.getexif(), image.info.get("xmp")
    light = np.round(_linear(rgb) * 60000).astype(np.uint16)
    mosaic = np.empty(light.shape[:2], np.uint16)
    mosaic[0::2, 0::2], mosaic[0::2, 1::2] = light[0::2, 0::2, 0], light[0::2, 1::2, 1]
    mosaic[1::2, 0::2], mosaic[1::2, 1::2] = light[1::2, 0::2, 1], light[1::2, 1::2, 2]
    tags = ImageFileDirectory_v2()
    for tag, value, kind in (
        (262, 32803, 3),  # PhotometricInterpretation: CFA
        (33421, (2, 2), 3), (33422, b"\x00\x01\x01\x02", 1),  # the 2x2 pattern: red, green / green, blue
        (50706, b"\x01\x04\x00\x00", 1), (50708, f"{exif.get(271)} {exif.get(272)}", 2),
        (50717, 60000, 4),  # WhiteLevel
        (50721, tuple(IFDRational(round(v * 10000), 10000) for row in XYZ_TO_SRGB for v in row), 10),
        (50728, (IFDRational(1, 1),) * 3, 5), (50778, 21, 3),  # AsShotNeutral; CalibrationIlluminant1: D65
    ):
        tags[tag] = value
        tags.tagtype[tag] = kind
    for tag, value in exif.items():
        if tag not in (ExifTags.IFD.Exif, ExifTags.IFD.GPSInfo, 274):
            tags[tag] = value
    tags[ExifTags.IFD.Exif] = dict(exif.get_ifd(ExifTags.IFD.Exif))
    tags[ExifTags.IFD.GPSInfo] = dict(exif.get_ifd(ExifTags.IFD.GPSInfo))
    if xmp:
        tags[700] = xmp
    Image.frombytes("I;16", (mosaic.shape[1], mosaic.shape[0]), mosaic.tobytes()).save(dng, format="TIFF",
                                                                                      tiffinfo=tags)


@pytest.fixture(scope="module")
def raw_project(tmp_path_factory: pytest.TempPathFactory):
    project = make_project(tmp_path_factory.mktemp("raw"))
    for name in SUBSET:
        jpeg = project.images_dir / name
        write_dng(jpeg, jpeg.with_suffix(".DNG"))
        jpeg.rename(project.root / name)  # the JPEG kept beside, out of the survey, to compare colours
    return project


def test_a_dng_develops_to_the_colours_of_its_jpeg(raw_project) -> None:
    dng = raw_project.images_dir / SUBSET[0].replace(".JPG", ".DNG")
    layout = read_layout(dng)
    assert (layout.width, layout.height, layout.bands, layout.dtype) == (1000, 562, 3, np.uint16)
    developed = read_stored(dng, 1.0).astype(np.float64)
    jpeg = cv2.imread(str(raw_project.root / SUBSET[0])).astype(np.float64)
    assert developed.shape == jpeg.shape
    for band in range(3):  # the same scene and white balance: linear in each other, no channel swapped
        correlation = np.corrcoef(developed[..., band].ravel(), jpeg[..., band].ravel())[0, 1]
        assert correlation > 0.95, (band, correlation)
    ratios = developed.reshape(-1, 3).mean(axis=0) / jpeg.reshape(-1, 3).mean(axis=0)
    assert ratios.max() / ratios.min() < 1.15, ratios  # grey stays grey: the camera's white balance applied
    assert read_stored(dng, 0.25).shape == (141, 250, 3)


def test_dngs_are_mapped_as_the_jpegs_are(raw_project) -> None:
    pipeline.run(raw_project, SFM)
    rec = stats(raw_project)["reconstruction"]
    assert rec["images_registered"] == len(SUBSET), rec["images_unregistered"]
    truth = exif_utm(SUBSET)
    centres = model_centres(raw_project)
    distances = [float(np.linalg.norm(centres[n.replace(".JPG", ".DNG")] - truth[n])) for n in SUBSET]
    assert max(distances) < TRUE_FIX_M, distances
