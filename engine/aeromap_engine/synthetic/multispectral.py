"""A synthetic multispectral survey as a DJI Mavic 3M writes it: per capture one 16-bit TIFF per band
(DJI_0001_MS_G.TIF, _MS_R, _MS_RE, _MS_NIR), each from its own camera of the rig (its own focal length and
principal point, centimetres and a fraction of a degree from the others), with the black level, gain, exposure,
vignetting, gain adjustment, the sunlight sensor's irradiance and the band camera's lens in DJI's XMP
(bands/radiometry.py and bands/lenses.py read them back); or, as a MicaSense RedEdge or a Parrot Sequoia writes
the same captures, IMG_0001_2.tif or IMG_0001_GRE.TIF and so on with that maker's tags (`maker`). The scene is
farmland: strips of crop and of bare soil. The truth beside it: the reflectance of every band as a perfect
orthophoto shows it (truth/reflectance.tif) and the surface classes (truth/classes.tif).

The sunlight changes through the flight (a thin cloud passing), and the exposure and gain follow it as a camera's
automatic exposure does, so that only calibration by the sunlight sensor gives the same reflectance throughout."""

from __future__ import annotations

import base64
import math
import struct
from dataclasses import dataclass, field, replace
from pathlib import Path

import cv2
import numpy as np
from PIL import ExifTags, Image
from PIL.TiffImagePlugin import IFDRational

from ..io.exif_write import dji_xmp as dji_xmp_packet
from ..parallel import forked_map
from .camera import Lens, LensSpec, Pose, Shot, lawnmower
from .metadata import Barometer, dji_xmp, exif_for, photograph_record, tiff_tags
from .noise import fractal_noise
from .render import RenderModel, render, shading
from .scene import SceneSpec, build_scene
from .site import Site, SurveySpec, locate
from .survey import lit_model
from .texture import Texture, halvings
from .truth import write_bands

BANDS = ("Green", "Red", "RedEdge", "NIR")
CROP, SOIL = 0, 1
# Reflectance per class (crop, soil) and band: green leaves absorb red and reflect near infrared strongly.
REFLECTANCE = np.array([[0.08, 0.04, 0.22, 0.46], [0.13, 0.17, 0.21, 0.25]], np.float32)
FULL_SCALE = 0.75  # the reflectance of a texture value of 255
BLACK_LEVEL = 3200
VIGNETTING = (1e-5, 3e-7, 0.0, 0.0, 0.0, 0.0)  # DJI's correction polynomial, r in pixels
READ_NOISE_DN = 12.0
IRRADIANCE = 2000.0  # the sunlight sensor's reading in the clear
EXPOSURE_US = 350.0  # the exposure at IRRADIANCE and gain 1


@dataclass(frozen=True)
class BandCamera:
    """One camera of the rig: its band, lens relative to the nominal, place and turn relative to the rig."""

    band: str
    suffix: str
    focal_scale: float
    centre_offset: tuple[float, float]  # px
    radial: tuple[float, float]  # (k1, k2) added to the nominal lens's: each band's lens bends its own way
    offset_m: tuple[float, float, float]  # in the rig's camera frame
    turn_deg: tuple[float, float, float]  # rotation vector relative to the rig's camera frame, degrees
    adjustment: float  # DJI SensorGainAdjustment

    def lens(self, nominal: Lens) -> Lens:
        return replace(nominal, focal_px=nominal.focal_px * self.focal_scale, centre_offset=self.centre_offset,
                       k1=nominal.k1 + self.radial[0], k2=nominal.k2 + self.radial[1])

    def pose(self, rig: Pose) -> Pose:
        rotation = rig.rotation @ _turn(self)
        return replace(rig, centre=rig.centre + rig.rotation @ np.array(self.offset_m), rotation=rotation)


# Each band's lens bends its own way: up to 4 px from the green's at the corners, more than a homography absorbs.
RIG = (BandCamera("Green", "G", 1.0, (0.0, 0.0), (0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 14.0),
       BandCamera("Red", "R", 1.012, (3.5, -2.0), (-0.025, 0.01), (0.021, 0.0, 0.0), (0.25, -0.15, 0.1), 15.5),
       BandCamera("RedEdge", "RE", 0.991, (-2.5, 3.0), (0.02, -0.01), (0.0, 0.021, 0.0), (-0.2, 0.3, -0.15), 13.0),
       BandCamera("NIR", "NIR", 1.006, (1.5, 2.5), (-0.012, 0.0), (0.021, 0.021, 0.0), (0.15, 0.2, 0.2), 16.0))


def band_pixels(band: str, pixels: np.ndarray, depth_m: float, nominal: Lens) -> np.ndarray:
    """(N, 2) where the points that the primary (Green) camera sees at `pixels`, `depth_m` ahead of the rig, fall
    in `band`'s frame: the truth a band's alignment is judged by."""
    primary, camera = RIG[0], next(c for c in RIG if c.band == band)
    rays = primary.lens(nominal).rays(pixels)
    in_primary = rays / rays[:, 2:] * depth_m
    in_rig = in_primary @ _turn(primary).T + np.array(primary.offset_m)
    return camera.lens(nominal).project((in_rig - np.array(camera.offset_m)) @ _turn(camera))


def _turn(camera: BandCamera) -> np.ndarray:
    return cv2.Rodrigues(np.radians(np.array(camera.turn_deg)))[0]


def lens_xmp(camera: BandCamera, nominal: Lens) -> dict[str, str]:
    """A band camera's lens in DJI's XMP: its pinhole and distortion (DewarpData, whose principal point is
    CalibratedOpticalCenter's here: no offset) and the homography from its undistorted pixels to the reference
    (green) camera's for a scene far away (DewarpHMatrix)."""
    lens, reference = camera.lens(nominal), RIG[0].lens(nominal)
    homography = _matrix(reference) @ _turn(RIG[0]).T @ _turn(camera) @ np.linalg.inv(_matrix(lens))
    dewarp = (lens.focal_px, lens.focal_px, 0.0, 0.0, lens.k1, lens.k2, lens.p1, lens.p2, 0.0)
    return {"drone-dji:CalibratedOpticalCenterX": f"{lens.cx:.3f}",
            "drone-dji:CalibratedOpticalCenterY": f"{lens.cy:.3f}",
            "drone-dji:DewarpData": "2026-01-01;" + ",".join(f"{value:.6f}" for value in dewarp),
            "drone-dji:DewarpHMatrix": ",".join(f"{value:.9g}" for value in (homography / homography[2, 2]).ravel())}


MICASENSE, SEQUOIA = "MicaSense", "Sequoia"
MICASENSE_NUMBERS = {"Blue": 1, "Green": 2, "Red": 3, "NIR": 4, "RedEdge": 5}  # the file's band number
MICASENSE_FALLOFF = (0.0, -1e-6)  # MicaSense's fall-off polynomial, r in pixels: 0.75 in the corners
SEQUOIA_SUFFIXES = {"Green": "GRE", "Red": "RED", "RedEdge": "REG", "NIR": "NIR"}
# The Sequoia's sensor model (A, B, C; B its dark level), f-number, and fall-off over (x / width, y / height):
# 1 - 0.8 ((u - 1/2)^2 + (v - 1/2)^2), 0.6 in the corners, as exponent pairs and coefficients.
SEQUOIA_MODEL = (1.3e7, float(BLACK_LEVEL), 3e4)
SEQUOIA_F_NUMBER = 2.2
SEQUOIA_FALLOFF = ((0, 0, 0.6), (1, 0, 0.8), (0, 1, 0.8), (2, 0, -0.8), (0, 2, -0.8))
# The sunshine sensor's counts at gain index 0 to 3 under its calibration light (gain index, integration time,
# CH0, CH1 each), and its counts in the clear at gain index 1 over 600 units.
SUNSHINE_CALIBRATION = (0, 100, 1000, 50, 1, 200, 3000, 60, 2, 400, 8000, 70, 3, 800, 20000, 80)
SUNSHINE_CLEAR = 4500


def micasense_falloff(lens: Lens) -> np.ndarray:
    """(h, w) the share of light reaching each pixel: MicaSense's polynomial is the fall-off itself."""
    yy, xx = np.mgrid[0:lens.height, 0:lens.width].astype(np.float64)
    r = np.hypot(xx - lens.cx, yy - lens.cy)
    return 1.0 + sum(k * r ** (i + 1) for i, k in enumerate(MICASENSE_FALLOFF))


def sequoia_falloff(lens: Lens) -> np.ndarray:
    """(h, w) the share of light reaching each pixel, as the Sequoia's 2D polynomial states it."""
    v, u = np.mgrid[0:lens.height, 0:lens.width].astype(np.float64)
    u, v = u / lens.width, v / lens.height
    return sum(c * u ** px * v ** py for px, py, c in SEQUOIA_FALLOFF)


def sunshine_counts(sunlight: float) -> int:
    """The Sequoia sunshine sensor's count at gain index 1 over 600 units under `sunlight`."""
    return int(round(SUNSHINE_CLEAR * sunlight / IRRADIANCE))


def sequoia_scale(sunlight: float, gain: float, exposure_us: float) -> float:
    """Digital numbers above the dark level per unit of reflectance: the irradiance the sunshine sensor reads
    (its counts over the calibration's at gain 1) times the sensor model's response."""
    a, _, c = SEQUOIA_MODEL
    calibration = SUNSHINE_CALIBRATION[6] * 600 / SUNSHINE_CALIBRATION[5]
    return sunshine_counts(sunlight) / calibration * (a * exposure_us * 1e-6 * gain * 100 + c) / SEQUOIA_F_NUMBER ** 2


def sequoia_xmp(camera: BandCamera, exif: Image.Exif, sunlight: float, gain: float, exposure_us: float) -> str:
    """A band file's XMP as the Parrot Sequoia writes it, and its EXIF's exposure, ISO and f-number (`exif` is
    completed): the sensor model, the 2D fall-off and the sunshine sensor's last readings and calibration."""
    _exposure_exif(exif, gain, exposure_us)
    exif.get_ifd(ExifTags.IFD.Exif)[ExifTags.Base.FNumber] = IFDRational(int(SEQUOIA_F_NUMBER * 10), 10)
    record = struct.Struct("<QHHHHfff")  # time, CH0, CH1, gain index, integration time, yaw, pitch, roll
    readings = b"".join(record.pack(k, sunshine_counts(sunlight), 0, 1, 600, 0, 0, 0) for k in range(4))
    return dji_xmp_packet({
        "Camera:BandName": camera.band, "Camera:SensorModel": ",".join(f"{value:g}" for value in SEQUOIA_MODEL),
        "Camera:VignettingPolynomial2DName": ",".join(f"{px},{py}" for px, py, _ in SEQUOIA_FALLOFF),
        "Camera:VignettingPolynomial2D": ",".join(f"{c:g}" for *_, c in SEQUOIA_FALLOFF),
        "Camera:IrradianceList": base64.b64encode(readings).decode("ascii"),
        "Camera:IrradianceCalibrationMeasurement": ",".join(str(value) for value in SUNSHINE_CALIBRATION)})


def _exposure_exif(exif: Image.Exif, gain: float, exposure_us: float) -> None:
    """The capture's exposure time and ISO (gain 1: ISO 100) in EXIF, where MicaSense and Parrot keep them."""
    details = exif.get_ifd(ExifTags.IFD.Exif)
    details[ExifTags.Base.ExposureTime] = IFDRational(int(round(exposure_us * 100)), 100_000_000)
    details[ExifTags.Base.ISOSpeedRatings] = int(round(gain * 100))


def micasense_xmp(camera: BandCamera, nominal: Lens, exif: Image.Exif, sunlight: float, gain: float,
                  exposure_us: float) -> str:
    """A band file's XMP as MicaSense writes it, and the EXIF it keeps its exposure, gain and black level in
    (`exif` is completed): the radiometric calibration a1 that makes the band's gain adjustment, the fall-off,
    the sunlight sensor's spectral irradiance and the band camera's lens and turn in the rig."""
    _exposure_exif(exif, gain, exposure_us)
    details = exif.get_ifd(ExifTags.IFD.Exif)
    exif[0xC61A] = (BLACK_LEVEL,) * 4  # BlackLevel, per colour channel as DNG writes it
    px_per_mm = float(details[ExifTags.Base.FocalPlaneXResolution]) / 10  # exif_for states it per centimetre
    lens = camera.lens(nominal)
    turn = _turn(camera)
    angles = np.degrees([np.arctan2(-turn[1, 2], turn[2, 2]), np.arcsin(turn[0, 2]),
                         np.arctan2(-turn[0, 1], turn[0, 0])])  # rig_turn's Rx Ry Rz
    a1 = camera.adjustment * 2 ** 16 / (math.pi * 1e6)
    return dji_xmp_packet({
        "Camera:BandName": camera.band, "Camera:RadiometricCalibration": f"{a1:.9g},0,0",
        "Camera:VignettingCenter": f"{lens.cx:.3f},{lens.cy:.3f}",
        "Camera:VignettingPolynomial": ",".join(f"{k:g}" for k in MICASENSE_FALLOFF),
        "Camera:SpectralIrradiance": f"{sunlight:.3f}",
        "Camera:PerspectiveFocalLength": f"{lens.focal_px / px_per_mm:.9f}",
        "Camera:PrincipalPoint": f"{lens.cx / px_per_mm:.9f},{lens.cy / px_per_mm:.9f}",
        "Camera:PerspectiveDistortion": f"{lens.k1:.9g},{lens.k2:.9g},0,{lens.p1:.9g},{lens.p2:.9g}",
        "Camera:RigRelatives": ",".join(f"{a:.9f}" for a in angles)})


def _matrix(lens: Lens) -> np.ndarray:
    return np.array([[lens.focal_px, 0, lens.cx], [0, lens.focal_px, lens.cy], [0, 0, 1.0]])


def _default_spec() -> SurveySpec:
    scene = SceneSpec(size_m=80.0, relief_m=1.0, buildings=0, trees=0, roads=0, control_points=0)
    return SurveySpec(scene=scene, lens=LensSpec(width=800, height=600, k1=-0.02, k2=0.0, p1=0.0, p2=0.0),
                      model="M3M", seed=5)


@dataclass(frozen=True)
class MultispectralSpec:
    survey: SurveySpec = field(default_factory=_default_spec)
    height_m: float = 40.0
    strip_m: float = 12.0  # width of the crop and soil strips
    irradiance_swing: float = 0.2  # the cloud's dimming, as a share of the clear sunlight
    # As the Parrot Sequoia: the band files carry no position, an RGB photograph per capture (_RGB.JPG) does.
    position_on_rgb: bool = False
    # "MicaSense": the files named and tagged as a MicaSense RedEdge writes them (IMG_0001_2.tif, its
    # radiometric calibration, fall-off, lenses and sunlight sensor); "Sequoia", as the Parrot Sequoia does
    # (IMG_0001_GRE.TIF, its sensor model, 2D fall-off and sunshine sensor); else as DJI's.
    maker: str = "DJI"


@dataclass(frozen=True)
class MultispectralTruth:
    root: Path
    images_dir: Path
    reflectance: Path  # float32, one band per BANDS, north up, in the CRS
    classes: Path  # uint8 CROP or SOIL
    captures: int


def farmland(n: int, cell: float, strip_m: float, rng: np.random.Generator) -> np.ndarray:
    """(n, n) classes: strips across the scene, alternately crop and soil, with ragged edges."""
    yy, xx = np.mgrid[0:n, 0:n].astype(np.float32) * np.float32(cell)
    ragged = fractal_noise((n, n), [1.0 / cell, 2.0 / cell], [1.0, 0.5], rng) * np.float32(1.5)
    return (((xx + 0.3 * yy + ragged) // strip_m) % 2).astype(np.uint8)


def reflectance_texture(classes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """(n, n, bands) uint8 reflectance (255 = FULL_SCALE): the class's reflectance times grain and patches shared
    by every band (leaf density, soil moisture), which change brightness but not the band ratios."""
    n = classes.shape[0]
    grain = fractal_noise((n, n), [2, 4, 8, 16, 32], [0.5, 0.8, 1.0, 1.0, 0.8], rng)
    patches = fractal_noise((n, n), [40, 80, 160], [0.5, 0.8, 1.0], rng)
    brightness = (np.float32(1.0) + np.float32(0.25) * grain) * (np.float32(1.0) + np.float32(0.15) * patches)
    values = REFLECTANCE[classes] * brightness[..., None] / np.float32(FULL_SCALE)
    return np.clip(values * 255 + 0.5, 0, 255).astype(np.uint8)


def irradiance_of(index: int, count: int, swing: float) -> float:
    """The sunlight at capture `index`: a cloud dims it through the middle of the flight."""
    return IRRADIANCE * (1.0 - swing * math.sin(math.pi * index / max(1, count - 1)) ** 2)


def vignetting_factor(lens: Lens) -> np.ndarray:
    """(h, w) the share of light reaching each pixel: the inverse of DJI's correction polynomial."""
    yy, xx = np.mgrid[0:lens.height, 0:lens.width].astype(np.float64)
    r = np.hypot(xx - lens.cx, yy - lens.cy)
    return 1.0 / (1.0 + sum(k * r ** (i + 1) for i, k in enumerate(VIGNETTING)))


def generate_multispectral(out_dir: Path, spec: MultispectralSpec = MultispectralSpec(),
                           workers: int = 1) -> MultispectralTruth:
    survey = spec.survey
    rng = np.random.default_rng(survey.seed)
    scene = build_scene(survey.scene, rng)
    cell = survey.scene.texture_cell_m
    n = int(round(scene.size_m / cell))
    classes = farmland(n, cell, spec.strip_m, rng)
    texture = Texture(cell, halvings(reflectance_texture(classes, rng), 5), 0.05, {})
    model = lit_model(survey, scene, texture)
    site = locate(survey)
    nominal = survey.lens.lens()
    flight = replace(survey.flight, height_m=spec.height_m)
    shots = lawnmower(nominal, flight, scene.size_m, float(scene.ground.z.mean()), rng)
    takeoff = float(scene.ground.sample(shots[0].pose.centre[:1], shots[0].pose.centre[1:2])[0])
    images_dir = out_dir / "images"
    images_dir.mkdir(parents=True, exist_ok=True)
    if spec.maker in (MICASENSE, SEQUOIA):
        survey = replace(survey, make="MicaSense" if spec.maker == MICASENSE else "Parrot",
                         model="RedEdge-M" if spec.maker == MICASENSE else "Sequoia")
    job = _CaptureJob(survey, site, model, nominal, Barometer(takeoff, 0.0, survey.barometer_sigma_m), images_dir,
                      len(shots), spec.irradiance_swing, spec.position_on_rgb, spec.maker)
    list(forked_map(job, list(enumerate(shots)), workers))

    truth_dir = out_dir / "truth"
    truth_dir.mkdir(parents=True, exist_ok=True)
    shade = shading(model.gradient_x, model.gradient_y, model.sun).astype(np.float32)
    shade = cv2.resize(shade, (n, n), interpolation=cv2.INTER_LINEAR)
    reflectance = texture.albedo.astype(np.float32) * np.float32(FULL_SCALE / 255) * shade[..., None]
    paths = MultispectralTruth(out_dir, images_dir, truth_dir / "reflectance.tif", truth_dir / "classes.tif",
                               len(shots))
    write_bands(paths.reflectance, reflectance, scene.size_m, site, list(BANDS))
    write_bands(paths.classes, classes[..., None], scene.size_m, site, ["class"])
    return paths


@dataclass(frozen=True)
class _CaptureJob:
    spec: SurveySpec
    site: Site
    model: RenderModel
    nominal: Lens
    barometer: Barometer
    images_dir: Path
    count: int
    swing: float
    position_on_rgb: bool
    maker: str

    def __call__(self, item: tuple[int, Shot]) -> None:
        index, shot = item
        rng = np.random.default_rng([self.spec.seed, index])
        sunlight = irradiance_of(index, self.count, self.swing)
        gain = 2.0 if sunlight < 0.9 * IRRADIANCE else 1.0  # the exposure would be too long otherwise
        exposure_us = EXPOSURE_US * IRRADIANCE / sunlight / gain
        for camera in RIG:
            lens, pose = camera.lens(self.nominal), camera.pose(shot.pose)
            reflectance = render(self.model, lens, pose)[:, :, BANDS.index(camera.band)] * np.float32(FULL_SCALE)
            if self.maker == SEQUOIA:
                signal = reflectance * sequoia_scale(sunlight, gain, exposure_us) * sequoia_falloff(lens)
            else:
                light = vignetting_factor(lens) if self.maker != MICASENSE else micasense_falloff(lens)
                signal = reflectance * sunlight * gain * exposure_us / camera.adjustment * light
            dn = BLACK_LEVEL + signal + rng.normal(0.0, READ_NOISE_DN, signal.shape)
            name = (f"IMG_{index + 1:04d}_{MICASENSE_NUMBERS[camera.band]}.tif" if self.maker == MICASENSE
                    else f"IMG_{index + 1:04d}_{SEQUOIA_SUFFIXES[camera.band]}.TIF" if self.maker == SEQUOIA
                    else f"DJI_{index + 1:04d}_MS_{camera.suffix}.TIF")
            photo = photograph_record(self.spec, self.site, replace(shot, pose=pose), name, self.barometer, rng)
            exif = exif_for(self.spec, lens, photo)
            if self.maker == MICASENSE:
                xmp = micasense_xmp(camera, self.nominal, exif, sunlight, gain, exposure_us)
            elif self.maker == SEQUOIA:
                xmp = sequoia_xmp(camera, exif, sunlight, gain, exposure_us)
            else:
                xmp = dji_xmp(self.spec, self.site, photo, {
                    "Camera:BandName": camera.band, "drone-dji:CaptureUUID": f"capture-{index + 1:04d}",
                    "drone-dji:BlackLevel": str(BLACK_LEVEL), "drone-dji:SensorGain": f"{gain:.1f}",
                    "drone-dji:ExposureTime": f"{exposure_us:.2f}",
                    "drone-dji:SensorGainAdjustment": f"{camera.adjustment}", "drone-dji:Irradiance": f"{sunlight:.3f}",
                    "drone-dji:VignettingData": ", ".join(f"{k:g}" for k in VIGNETTING),
                    **lens_xmp(camera, self.nominal)})
            pixels = np.clip(np.round(dn), 0, 65535).astype(np.uint16)
            if self.position_on_rgb:
                exif.get_ifd(ExifTags.IFD.GPSInfo).clear()
            Image.fromarray(pixels).save(self.images_dir / name, tiffinfo=tiff_tags(exif, xmp))
        if self.position_on_rgb:
            self.write_rgb(index, shot, rng)

    def write_rgb(self, index: int, shot: Shot, rng: np.random.Generator) -> None:
        """The capture's RGB photograph (red, green and a blue darker than green), with the position."""
        bands = render(self.model, self.nominal, shot.pose) * np.float32(FULL_SCALE)
        colour = np.dstack([bands[:, :, BANDS.index("Red")], bands[:, :, BANDS.index("Green")],
                            0.6 * bands[:, :, BANDS.index("Green")]])
        name = f"{'DJI' if self.maker == 'DJI' else 'IMG'}_{index + 1:04d}_RGB.JPG"
        photo = photograph_record(self.spec, self.site, shot, name, self.barometer, rng)
        pixels = np.clip(colour * 4 * 255, 0, 255).astype(np.uint8)
        Image.fromarray(pixels).save(self.images_dir / name, "JPEG", quality=90,
                                     exif=exif_for(self.spec, self.nominal, photo))
