"""Photographs that are not plain 8-bit colour: 16-bit and floating-point samples (thermal cameras, 16-bit TIFF
exports), a single band, an alpha band, more than three bands (multispectral). Synthetic files with known pixel
values first, then the Brighton subset of test_sfm.py converted to 16-bit TIFFs and reconstructed like its JPEGs.

The reference for 8-bit files and the negative controls is the reading before 16-bit support: OpenCV's colour
decode (reduced by powers of two for JPEG), and Pillow's grey conversion for the dataset's uniform-frame check.
"""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pycolmap
import pytest
import rasterio
from PIL import Image

from aeromap_engine import pipeline
from aeromap_engine.errors import InputError
from aeromap_engine.io.images import Levels, dataset_levels, load_levels, read_scaled, stretch
from aeromap_engine.io.ply import read_ply
from aeromap_engine.project import Project
from aeromap_engine.stages.dataset import MIN_CONTENT_STDDEV
from test_sfm import DATASET, SFM, SUBSET, downscale, exif_utm, make_project, model_centres

pytestmark = pytest.mark.filterwarnings("ignore::rasterio.errors.NotGeoreferencedWarning")

# A thermal camera's range: 4 counts per grey level of the source photographs above a dark level of 3000, about
# 1000 counts in all. Cut to its high byte, that is 5 grey levels.
GAIN, DARK = 4, 3000
OLD_FLAGS = {1: cv2.IMREAD_COLOR, 2: cv2.IMREAD_REDUCED_COLOR_2, 4: cv2.IMREAD_REDUCED_COLOR_4,
             8: cv2.IMREAD_REDUCED_COLOR_8}


def old_read(path: Path, factor: int = 1) -> np.ndarray:
    """How every stage read a photograph before: OpenCV's 8-bit colour decode."""
    return cv2.imread(str(path), OLD_FLAGS[factor] | cv2.IMREAD_IGNORE_ORIENTATION)


def old_content_stddev(path: Path) -> float:
    """The dataset stage's former uniform-frame figure: Pillow's grey at 1/8 scale."""
    with Image.open(path) as image:
        image.draft("L", (image.width // 8, image.height // 8))
        return float(np.asarray(image.convert("L")).std())


def write_bands(path: Path, bands: np.ndarray, **profile: str) -> None:
    """A TIFF of bands (n, h, w) written by GDAL, which stores any band count and sample type."""
    with rasterio.open(path, "w", driver="GTiff", width=bands.shape[2], height=bands.shape[1],
                       count=bands.shape[0], dtype=bands.dtype, **profile) as target:
        target.write(bands)


def ramp(height: int, width: int, low: float, high: float, dtype: type = np.uint16) -> np.ndarray:
    """Values from low (top left) to high (bottom right), each pixel different."""
    steps = np.arange(height * width, dtype=np.float64).reshape(height, width) / (height * width - 1)
    return (low + steps * (high - low)).round().astype(dtype)


def test_one_stretch_maps_the_dataset_range_onto_0_255(tmp_path: Path) -> None:
    """Two 16-bit photographs of different ranges share one stretch: a value gives the same grey in both, and
    neither is stretched to its own range."""
    dim, bright = ramp(60, 80, 3000, 4000), ramp(60, 80, 3500, 5000)
    levels = dataset_levels([dim, bright])
    # The pooled 0.5th and 99.5th percentiles: of 9600 values spread over 3000..5000, 48 lie below the first.
    assert 3000 < levels.low < 3020 and 4980 < levels.high < 5000
    assert stretch(np.array([levels.low, levels.high, 0, 65535]), levels).tolist() == [0, 255, 0, 255]
    middle = (levels.low + levels.high) / 2
    assert stretch(np.array([middle - 0.01, middle + 0.01]), levels).tolist() == [127, 128]
    assert stretch(np.array([np.nan, 1e9], np.float32), levels).tolist() == [0, 255]

    Image.fromarray(dim).save(tmp_path / "dim.tif")
    Image.fromarray(bright).save(tmp_path / "bright.tif")
    dim8, bright8 = (read_scaled(tmp_path / f"{n}.tif", 1.0, levels)[:, :, 0].astype(int) for n in ("dim", "bright"))
    expected = np.round((dim.astype(float) - levels.low) * 255 / (levels.high - levels.low))
    assert np.abs(dim8 - np.clip(expected, 0, 255)).max() <= 1
    assert dim8.max() == pytest.approx(255 * (4000 - levels.low) / (levels.high - levels.low), abs=1)  # ~127
    assert bright8.max() == 255 and bright8.min() == pytest.approx(dim8[dim == 3500].mean(), abs=1)
    with pytest.raises(InputError, match="levels"):
        read_scaled(tmp_path / "dim.tif", 1.0)


@pytest.mark.parametrize("scale, factor", [(1.0, 1), (0.5, 2), (0.3, 2), (0.2, 4), (0.125, 8), (0.05, 8)])
def test_8bit_reads_are_as_before(tmp_path: Path, scale: float, factor: int) -> None:
    """JPEG (decoded at reduced size), grey and RGBA PNG, RGB and palette TIFF: the very same bytes as before,
    with or without levels."""
    rng = np.random.default_rng(1)
    colour = rng.integers(0, 256, (90, 120, 3), np.uint8)
    files = [DATASET / SUBSET[0]]
    for name, image in [("grey.png", Image.fromarray(colour[:, :, 0])),
                        ("rgba.png", Image.fromarray(np.dstack([colour, colour[:, :, :1]]), "RGBA")),
                        ("rgb.tif", Image.fromarray(colour)),
                        ("palette.tif", Image.fromarray(colour).quantize(32))]:
        image.save(tmp_path / name)
        files.append(tmp_path / name)
    for path in files:
        before = old_read(path, factor)
        assert np.array_equal(read_scaled(path, scale), before), path.name
        assert np.array_equal(read_scaled(path, scale, Levels(3000.0, 4000.0)), before), path.name


@pytest.mark.parametrize("layout", ["grey16", "float32", "rgb16", "rgba16", "bands5_16", "bands5_8", "bgr16_opencv"])
def test_every_layout_gives_8bit_bgr(tmp_path: Path, layout: str) -> None:
    """One band gives grey; of more, the first three are red, green and blue; an alpha band is dropped."""
    height, width = 48, 64
    bands = np.stack([ramp(height, width, 3000 + 100 * b, 3400 + 100 * b) for b in range(5)])  # all differ
    levels = Levels(3000.0, 3900.0)
    path = tmp_path / f"{layout}.tif"
    if layout == "grey16":
        write_bands(path, bands[:1])
    elif layout == "float32":
        bands = bands.astype(np.float32) / 100  # degrees, say
        levels = Levels(30.0, 39.0)
        write_bands(path, bands[:1])
    elif layout == "rgb16":
        write_bands(path, bands[:3], photometric="RGB")
    elif layout == "rgba16":
        bands[3] = 65535  # opaque: would show as white if taken for colour
        write_bands(path, bands[:4], photometric="RGB", alpha="YES")
    elif layout == "bands5_16":
        write_bands(path, bands)
    elif layout == "bands5_8":
        bands = (bands - 3000).astype(np.uint8)
        write_bands(path, bands)
    else:  # OpenCV's own 16-bit export, colour in its BGR order
        cv2.imwrite(str(path), bands[2::-1].transpose(1, 2, 0))
    image = read_scaled(path, 1.0, levels)
    assert image.dtype == np.uint8 and image.shape == (height, width, 3)
    first = [0] * 3 if layout in ("grey16", "float32") else [2, 1, 0]  # BGR channels from file bands
    expected = np.stack([bands[b] for b in first], axis=2)
    if expected.dtype != np.uint8:
        expected = stretch(expected, levels)
    assert np.array_equal(image, expected)
    assert image.std() > 20  # the ramps span most of the levels
    reduced = read_scaled(path, 0.25, levels)
    assert reduced.shape == (12, 16, 3) and abs(reduced.mean() - image.mean()) < 2


def tiff_16bit(source: Path, target: Path, gain: int = GAIN, dark: int = DARK) -> None:
    """A 16-bit grey TIFF of a photograph, thermal-like (see GAIN), with its EXIF (GPS included) and XMP."""
    with Image.open(source) as image:
        exif = image.getexif()
        exif[700] = image.info["xmp"]  # the TIFF tag of the XMP packet
        grey = np.asarray(image.convert("L")).astype(np.uint16)
    Image.fromarray(grey * gain + dark).save(target, exif=exif)


def test_dataset_stage_reads_16bit_and_multiband_files(tmp_path: Path, engine_log) -> None:
    """Textured 16-bit frames pass (the old check refused them), a uniform one is still refused, a 5-band file
    Pillow cannot open is read with its GPS, and the shared levels are recorded."""
    project = Project(tmp_path / "p")
    images = project.images_dir
    images.mkdir(parents=True)
    for name in SUBSET[:2]:
        downscale(DATASET / name, tmp_path / name)
        tiff_16bit(tmp_path / name, images / f"{Path(name).stem}.tif")
    rng = np.random.default_rng(2)
    uniform = (3500 + rng.normal(0, 1.5, (200, 300))).astype(np.uint16)  # sensor noise only: lens cap
    Image.fromarray(uniform).save(images / "cap.tif")
    five = np.stack([ramp(200, 300, 3100 + 50 * b, 3900) for b in range(5)])
    write_bands(images / "multispectral.tif", five)
    # The old check refused the real photographs.
    assert old_content_stddev(images / f"{Path(SUBSET[0]).stem}.tif") < MIN_CONTENT_STDDEV
    with pytest.raises(Exception):
        Image.open(images / "multispectral.tif")

    with engine_log() as captured:
        pipeline.run(project, [{"name": "end-with", "value": "dataset"}])
        lines = captured.lines
    report = project.read_stats()["dataset"]
    assert report["images_usable"] == 3 and list(report["images_rejected"]) == ["cap.tif"]
    assert "uniform" in report["images_rejected"]["cap.tif"]
    levels = load_levels(project.radiometry_file)
    assert report["levels"] == {"low": levels.low, "high": levels.high}
    assert DARK <= levels.low < levels.low + 600 < levels.high <= DARK + 255 * GAIN
    assert any("5 bands: 1 image" in line and "first three" in line for line in lines)
    assert any("uint16: 3 images" in line for line in lines)

    photos = {p["filename"]: p for p in json.loads(project.images_json.read_text())}
    truth = exif_utm(SUBSET[:2])
    first = photos[f"{Path(SUBSET[0]).stem}.tif"]
    assert first["camera_make"] == "DJI" and first["relative_altitude"] > 30 and first["width"] == 1000
    for name in SUBSET[:2]:  # the GPS, read from the TIFF's own EXIF
        assert photos[f"{Path(name).stem}.tif"]["altitude"] == pytest.approx(truth[name][2])
    assert photos["multispectral.tif"]["width"] == 300 and photos["multispectral.tif"]["height"] == 200

    (images / "multispectral.tif").unlink()
    (images / "cap.tif").unlink()
    for name in SUBSET[:2]:  # 8-bit again: no levels left behind
        (images / f"{Path(name).stem}.tif").unlink()
        (tmp_path / name).rename(images / name)
    pipeline.run(project, [{"name": "end-with", "value": "dataset"}, {"name": "rerun-all", "value": True}])
    assert not project.radiometry_file.exists() and project.read_stats()["dataset"]["levels"] is None


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Project, Project]:
    """The subset reconstructed from its 1000 px JPEGs and from 16-bit TIFFs of the same pictures."""
    jpeg = make_project(tmp_path_factory.mktemp("jpeg"))
    tiff = Project(tmp_path_factory.mktemp("tiff"))
    tiff.images_dir.mkdir()
    for name in SUBSET:
        tiff_16bit(jpeg.images_dir / name, tiff.images_dir / f"{Path(name).stem}.tif")
    pipeline.run(jpeg, SFM)
    pipeline.run(tiff, SFM)
    return jpeg, tiff


@pytest.mark.long
def test_16bit_tiffs_reconstruct_like_the_jpegs(runs: tuple[Project, Project]) -> None:
    jpeg, tiff = runs
    reconstruction = tiff.read_stats()["reconstruction"]
    assert reconstruction["images_registered"] == len(SUBSET) and reconstruction["georef_source"] == "gps"
    assert reconstruction["mean_reprojection_error_px"] < 1.0 and reconstruction["points"] > 300
    levels = tiff.read_stats()["dataset"]["levels"]
    assert DARK <= levels["low"] < levels["high"] <= DARK + 255 * GAIN
    from_jpeg = {Path(n).stem: c for n, c in model_centres(jpeg).items()}
    from_tiff = {Path(n).stem: c for n, c in model_centres(tiff).items()}
    gps = {Path(n).stem: c for n, c in exif_utm(SUBSET).items()}
    # Structure from motion on six images is not repeatable to the centimetre: mapping runs in threads, and a run
    # of the same TIFFs lands either within 10 cm of the JPEG run's cameras or about a metre away, bent within
    # the GPS fixes' noise. So the layout is held to the fixes' accuracy, not to the other run's.
    shifts = np.array([from_tiff[n] - from_jpeg[n] for n in from_jpeg])
    apart = np.linalg.norm(shifts - shifts.mean(axis=0), axis=1)
    off_gps = np.array([np.linalg.norm(from_tiff[n] - gps[n]) for n in gps])
    print(f"levels {levels}; TIFF cameras from the JPEG run's: shift {shifts.mean(axis=0).round(3)} m, then "
          f"{apart.round(3)} m; from their GPS: {off_gps.round(3)} m")
    assert apart.max() < 1.5 and off_gps.max() < 1.5

    # The sparse points take the stretched grey of the images, not the few levels of their high byte.
    model = pycolmap.Reconstruction(tiff.root / "opensfm" / "reconstruction")
    colours = np.array([p.color for p in model.points3D.values()], float)
    assert (colours[:, 0] == colours[:, 1]).all() and (colours[:, 1] == colours[:, 2]).all()
    assert colours.std() > 20 and np.ptp(colours) > 150
    assert read_ply(tiff.root / "opensfm" / "sparse.ply").rgb.std() > 20


@pytest.mark.long
def test_the_old_reading_saw_nearly_nothing_in_these_tiffs(runs: tuple[Project, Project]) -> None:
    """Negative control: the same TIFFs read the old way are near-uniform frames."""
    _, tiff = runs
    levels = load_levels(tiff.radiometry_file)
    for path in sorted(tiff.images_dir.iterdir()):
        old = cv2.cvtColor(old_read(path), cv2.COLOR_BGR2GRAY)
        new = cv2.cvtColor(read_scaled(path, 1.0, levels), cv2.COLOR_BGR2GRAY)
        print(f"{path.name}: old grey std {old.std():.2f} over {len(np.unique(old))} levels, Pillow's grey std "
              f"{old_content_stddev(path):.2f}; now {new.std():.1f} over {len(np.unique(new))} levels")
        assert old.std() < MIN_CONTENT_STDDEV and len(np.unique(old)) <= 6
        assert old_content_stddev(path) < MIN_CONTENT_STDDEV
        assert new.std() > 15 * MIN_CONTENT_STDDEV and len(np.unique(new)) > 150
