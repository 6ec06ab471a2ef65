"""Cameras of a synthetic survey: the Brown lens, camera orientations from drone angles, and the lawnmower flight.

Frames and conventions (those of the engine, so that truth and reconstruction compare without conversions):
- world: the scene's local frame, x east, y north, z up, metres;
- camera: OpenCV's, x to the image's right, y down the image, z along the optical axis;
- pixels: the first pixel's centre is (0, 0) (ODM's gcp_list.txt convention), the principal point the image
  centre ((width - 1) / 2, (height - 1) / 2), which is COLMAP's default once its half-pixel shift is counted;
- angles: yaw degrees clockwise from north (heading of the image's top), pitch degrees from nadir towards the
  heading (ODM's convention; DJI's gimbal pitch is this minus 90), roll degrees about the optical axis, positive
  turning the image's right side down (DJI's right-wing-down).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Lens:
    """A pinhole with Brown distortion, COLMAP's OPENCV model (k1, k2 radial; p1, p2 tangential): the model the
    engine fits for camera-lens brown, so that a perfect reconstruction can represent it exactly."""

    width: int
    height: int
    focal_px: float
    k1: float = 0.0
    k2: float = 0.0
    p1: float = 0.0
    p2: float = 0.0
    centre_offset: tuple[float, float] = (0.0, 0.0)  # the principal point's offset from the frame's centre, px

    @property
    def cx(self) -> float:
        return (self.width - 1) / 2.0 + self.centre_offset[0]

    @property
    def cy(self) -> float:
        return (self.height - 1) / 2.0 + self.centre_offset[1]

    def distort(self, xn: np.ndarray, yn: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Normalised undistorted coordinates (X/Z, Y/Z) to normalised distorted ones."""
        r2 = xn * xn + yn * yn
        radial = 1.0 + r2 * (self.k1 + r2 * self.k2)
        xy = xn * yn
        xd = xn * radial + 2.0 * self.p1 * xy + self.p2 * (r2 + 2.0 * xn * xn)
        yd = yn * radial + self.p1 * (r2 + 2.0 * yn * yn) + 2.0 * self.p2 * xy
        return xd, yd

    def undistort(self, xd: np.ndarray, yd: np.ndarray, iterations: int = 30) -> tuple[np.ndarray, np.ndarray]:
        """Inverse of distort by fixed-point iteration: the distortion has no closed-form inverse, and for the
        few percent a survey lens has, the iteration converges to machine precision well within 30 steps."""
        xn, yn = xd.copy(), yd.copy()
        for _ in range(iterations):
            r2 = xn * xn + yn * yn
            radial = 1.0 + r2 * (self.k1 + r2 * self.k2)
            xy = xn * yn
            dx = 2.0 * self.p1 * xy + self.p2 * (r2 + 2.0 * xn * xn)
            dy = self.p1 * (r2 + 2.0 * yn * yn) + 2.0 * self.p2 * xy
            xn = (xd - dx) / radial
            yn = (yd - dy) / radial
        return xn, yn

    def project(self, points_camera: np.ndarray) -> np.ndarray:
        """(N, 3) points in the camera frame to (N, 2) pixels; points behind the camera give NaN."""
        z = points_camera[:, 2]
        with np.errstate(divide="ignore", invalid="ignore"):
            xn = np.where(z > 0, points_camera[:, 0] / z, np.nan)
            yn = np.where(z > 0, points_camera[:, 1] / z, np.nan)
        xd, yd = self.distort(xn, yn)
        return np.stack([self.focal_px * xd + self.cx, self.focal_px * yd + self.cy], axis=1)

    def rays(self, pixels: np.ndarray) -> np.ndarray:
        """(N, 2) pixels to (N, 3) unit directions in the camera frame."""
        xd = (pixels[:, 0] - self.cx) / self.focal_px
        yd = (pixels[:, 1] - self.cy) / self.focal_px
        xn, yn = self.undistort(xd, yd)
        directions = np.stack([xn, yn, np.ones_like(xn)], axis=1)
        return directions / np.linalg.norm(directions, axis=1, keepdims=True)

    def pixel_rays(self) -> np.ndarray:
        """Unit directions of every pixel centre, (height * width, 3) in row-major order."""
        rows, cols = np.mgrid[0:self.height, 0:self.width]
        pixels = np.stack([cols.ravel(), rows.ravel()], axis=1).astype(np.float64)
        return self.rays(pixels)


def rotation_from_angles(yaw_deg: float, pitch_deg: float, roll_deg: float) -> np.ndarray:
    """World-from-camera rotation (its columns are the camera's axes in the world) of a camera with these
    angles (module docstring): at pitch 0 it looks straight down with the image's top towards the heading."""
    yaw, pitch, roll = (math.radians(a) for a in (yaw_deg, pitch_deg, roll_deg))
    heading = np.array([math.sin(yaw), math.cos(yaw), 0.0])
    right = np.array([math.cos(yaw), -math.sin(yaw), 0.0])
    up = np.array([0.0, 0.0, 1.0])
    axis = math.sin(pitch) * heading - math.cos(pitch) * up
    down_image = -math.cos(pitch) * heading - math.sin(pitch) * up
    level = np.stack([right, down_image, axis], axis=1)
    c, s = math.cos(roll), math.sin(roll)
    return level @ np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


@dataclass(frozen=True)
class Pose:
    """Where a photograph was taken from, and the angles its metadata report."""

    centre: np.ndarray  # (3,) world frame
    rotation: np.ndarray  # (3, 3) world from camera
    yaw_deg: float
    pitch_deg: float  # from nadir (ODM)
    roll_deg: float
    flight_yaw_deg: float  # the aircraft's heading, which DJI records beside the gimbal's

    @classmethod
    def from_angles(cls, centre: np.ndarray, yaw_deg: float, pitch_deg: float, roll_deg: float,
                    flight_yaw_deg: float | None = None) -> "Pose":
        return cls(np.asarray(centre, dtype=np.float64), rotation_from_angles(yaw_deg, pitch_deg, roll_deg),
                   yaw_deg, pitch_deg, roll_deg, yaw_deg if flight_yaw_deg is None else flight_yaw_deg)

    def to_camera(self, points: np.ndarray) -> np.ndarray:
        """(N, 3) world points to the camera frame."""
        return (points - self.centre) @ self.rotation

    def to_world_directions(self, directions: np.ndarray) -> np.ndarray:
        r = self.rotation
        # Three scaled columns: numpy's matmul is slow for (N, 3) by (3, 3).
        return (directions[:, 0:1] * r[:, 0] + directions[:, 1:2] * r[:, 1] + directions[:, 2:3] * r[:, 2])


def project_points(lens: Lens, pose: Pose, points: np.ndarray) -> np.ndarray:
    """(N, 3) world points to (N, 2) pixels (NaN behind the camera)."""
    return lens.project(pose.to_camera(np.atleast_2d(points)))


@dataclass(frozen=True)
class FlightSpec:
    """A lawnmower flight: lines running north-south, flown alternately northwards and southwards, each photograph
    looking along the line (the image's top ahead, as a DJI gimbal in a mapping mission holds it)."""

    height_m: float = 70.0  # above the scene's mean ground
    forward_overlap: float = 0.75
    side_overlap: float = 0.65
    oblique_pitch_deg: float = 0.0  # camera tilted forward from nadir
    yaw_jitter_deg: float = 0.0  # standard deviations of the attitude around the plan
    pitch_jitter_deg: float = 0.0
    roll_jitter_deg: float = 0.0
    position_jitter_m: float = 0.0  # how far the aircraft strays from the planned point (true position, not GPS)
    margin_m: float = 3.0  # kept between the planned footprints and the scene's border
    speed_m_s: float = 6.0
    turn_s: float = 12.0


@dataclass(frozen=True)
class Shot:
    """One planned photograph, in capture order."""

    pose: Pose
    seconds: float  # since the first photograph
    line: int


@dataclass(frozen=True)
class FootprintExtent:
    """The bounding box of a camera's ground footprint relative to the camera, for a northward heading."""

    west: float
    east: float
    south: float
    north: float

    @property
    def width(self) -> float:
        return self.east - self.west

    @property
    def length(self) -> float:
        return self.north - self.south


def footprint_extent(lens: Lens, height_m: float, pitch_deg: float) -> FootprintExtent:
    """Where the image's border meets flat ground height_m below the camera, heading north."""
    pose = Pose.from_angles(np.zeros(3), 0.0, pitch_deg, 0.0)
    w, h = lens.width - 1, lens.height - 1
    border = np.concatenate([np.stack([np.linspace(0, w, 33), np.full(33, v)], axis=1) for v in (0, h)]
                            + [np.stack([np.full(33, u), np.linspace(0, h, 33)], axis=1) for u in (0, w)])
    directions = pose.to_world_directions(lens.rays(border))
    if np.any(directions[:, 2] >= -1e-3):
        raise ValueError("The image's border reaches the horizon: lower the oblique pitch")
    ground = directions[:, :2] * (height_m / -directions[:, 2:3])
    return FootprintExtent(float(ground[:, 0].min()), float(ground[:, 0].max()), float(ground[:, 1].min()),
                           float(ground[:, 1].max()))


def _stations(low: float, high: float, spacing: float) -> np.ndarray:
    """Evenly spaced positions from low to high, no further apart than spacing (so overlaps are at least the
    requested ones)."""
    if high <= low:
        return np.array([(low + high) / 2.0])
    count = int(math.ceil((high - low) / spacing - 1e-9)) + 1
    return np.linspace(low, high, count)


def lawnmower(lens: Lens, flight: FlightSpec, scene_size_m: float, ground_z: float,
              rng: np.random.Generator) -> list[Shot]:
    """Plan the flight over a square scene [0, size]^2 so that every footprint (over ground at ground_z) stays
    inside the scene: rays that leave it would see the clamped border, which no real survey shows."""
    nadir = footprint_extent(lens, flight.height_m, 0.0)
    north = footprint_extent(lens, flight.height_m, flight.oblique_pitch_deg)
    # Southward lines see the footprint turned by 180 degrees: fit the union of both headings.
    west, east = min(north.west, -north.east), max(north.east, -north.west)
    south, northmost = min(north.south, -north.north), max(north.north, -north.south)
    m = flight.margin_m
    xs = _stations(m - west, scene_size_m - m - east, (1.0 - flight.side_overlap) * nadir.width)
    ys = _stations(m - south, scene_size_m - m - northmost, (1.0 - flight.forward_overlap) * nadir.length)
    shots: list[Shot] = []
    seconds = 0.0
    along = float(ys[1] - ys[0]) if len(ys) > 1 else 0.0
    for line, x in enumerate(xs):
        northward = line % 2 == 0
        heading = 0.0 if northward else 180.0
        for k, y in enumerate(ys if northward else ys[::-1]):
            if shots:
                seconds += along / flight.speed_m_s if k else flight.turn_s
            jitter = rng.normal(size=6)
            centre = np.array([x, y, ground_z + flight.height_m])
            centre += jitter[:3] * flight.position_jitter_m * np.array([1.0, 1.0, 0.3])
            yaw = _wrap(heading + jitter[3] * flight.yaw_jitter_deg)
            pitch = flight.oblique_pitch_deg + jitter[4] * flight.pitch_jitter_deg
            roll = jitter[5] * flight.roll_jitter_deg
            shots.append(Shot(Pose.from_angles(centre, yaw, pitch, roll, flight_yaw_deg=heading), seconds, line))
    return shots


def _wrap(degrees: float) -> float:
    """Degrees into [-180, 180), the range DJI writes."""
    return (degrees + 180.0) % 360.0 - 180.0


@dataclass(frozen=True)
class LensSpec:
    """The camera as its metadata describe it. The focal length in pixels follows from the 35 mm equivalent,
    which EXIF stores as a whole number of millimetres and which the engine reads first: deriving the lens from
    it keeps the metadata exact."""

    width: int = 1200
    height: int = 900
    focal_35mm: int = 35
    sensor_width_mm: float = 13.2  # a 1-inch sensor
    k1: float = -0.06
    k2: float = 0.015
    p1: float = 0.0004
    p2: float = -0.0003

    @property
    def focal_mm(self) -> float:
        return self.focal_35mm / 36.0 * self.sensor_width_mm

    def lens(self) -> Lens:
        return Lens(self.width, self.height, self.focal_35mm / 36.0 * self.width, self.k1, self.k2, self.p1,
                    self.p2)
