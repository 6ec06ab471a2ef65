"""A band camera's lens as its metadata states it, and the alignment to the primary band that the lenses predict.

DJI's multispectral cameras (P4 Multispectral, Mavic 3M) write each band's calibrated pinhole and Brown
distortion (`DewarpData`: a date, then fx, fy, the principal point's offset from `CalibratedOpticalCenterX/Y`,
k1, k2, p1, p2, k3) and the homography that carries the band's undistorted frame onto the rig's reference band's
(`DewarpHMatrix`). MicaSense writes the focal length and principal point in millimetres (the focal length in
pixels where its units say so), with the focal plane's resolution in EXIF, the distortion in the order k1, k2,
k3, p1, p2, and the band camera's turn in the rig (`RigRelatives`: the angles of Rx Ry Rz, degrees, carrying the
camera's rays into the rig's frame). Where the primary's and a band's lens are both stated, they predict where
each primary pixel falls in the band's frame for a scene far away compared with the centimetres between the
cameras: the start the images' own alignment is refined from, and the alignment kept where the images give none
(a bare field, a band of another kind of light). Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from ..io.exif import MM_PER_UNIT
from .alignment import MAX_FIELD_PX, BandAlignment, fit_field
from .radiometry import first_number, number_list

GRID = 33  # primary pixels per side the predicted alignment is fitted on, the frame's border included
_UNDISTORT = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 50, 1e-12)


@dataclass(frozen=True)
class BandLens:
    """A pinhole with OpenCV's Brown distortion, and where its metadata gives one, the homography from its
    undistorted pixels to the rig's reference band's."""

    focal: tuple[float, float]  # fx, fy in pixels
    centre: tuple[float, float]  # principal point, pixels
    distortion: tuple[float, float, float, float, float]  # k1, k2, p1, p2, k3
    to_reference: tuple[float, ...] | None = None  # row-major 3x3
    turn: tuple[float, ...] | None = None  # row-major 3x3: the camera's rays into the rig's frame

    @staticmethod
    def of(exif: dict[str, Any], xmp: dict[str, str]) -> "BandLens | None":
        """The lens a band photograph's metadata states, None where it states none."""
        return _dji(xmp) or _micasense(exif, xmp)

    def matrix(self) -> np.ndarray:
        return np.array([[self.focal[0], 0, self.centre[0]], [0, self.focal[1], self.centre[1]], [0, 0, 1]],
                        np.float64)

    def to_json(self) -> dict[str, Any]:
        return {"focal": list(self.focal), "centre": list(self.centre), "distortion": list(self.distortion),
                "to_reference": list(self.to_reference) if self.to_reference else None,
                "turn": list(self.turn) if self.turn else None}

    @staticmethod
    def from_json(data: dict[str, Any]) -> "BandLens":
        reference, turn = data.get("to_reference"), data.get("turn")
        return BandLens(tuple(data["focal"]), tuple(data["centre"]), tuple(data["distortion"]),
                        tuple(reference) if reference else None, tuple(turn) if turn else None)


def _dji(xmp: dict[str, str]) -> BandLens | None:
    dewarp = xmp.get("drone-dji:DewarpData", "")
    values = number_list(dewarp.split(";", 1)[-1])
    centre_x = first_number(xmp.get("drone-dji:CalibratedOpticalCenterX"))
    centre_y = first_number(xmp.get("drone-dji:CalibratedOpticalCenterY"))
    if len(values) != 9 or centre_x is None or centre_y is None or min(values[:2]) <= 0:
        return None
    fx, fy, dx, dy, k1, k2, p1, p2, k3 = values
    homography = number_list(xmp.get("drone-dji:DewarpHMatrix"))
    return BandLens((fx, fy), (centre_x + dx, centre_y + dy), (k1, k2, p1, p2, k3),
                    homography if len(homography) == 9 else None)


def _micasense(exif: dict[str, Any], xmp: dict[str, str]) -> BandLens | None:
    focal_stated = first_number(xmp.get("Camera:PerspectiveFocalLength"))
    centre_mm = number_list(xmp.get("Camera:PrincipalPoint"))
    distortion = number_list(xmp.get("Camera:PerspectiveDistortion"))
    unit = first_number(exif.get("FocalPlaneResolutionUnit"))
    per_unit = first_number(exif.get("FocalPlaneXResolution"))
    mm = MM_PER_UNIT.get(int(unit)) if unit is not None else None
    if not focal_stated or len(centre_mm) != 2 or len(distortion) != 5 or not mm or not per_unit:
        return None
    px_per_mm = per_unit / mm
    # Some firmware states the focal length in pixels, and says so.
    in_pixels = xmp.get("Camera:PerspectiveFocalLengthUnits", "mm").strip().lower() in ("px", "pixel", "pixels")
    focal = focal_stated if in_pixels else focal_stated * px_per_mm
    k1, k2, k3, p1, p2 = distortion
    angles = number_list(xmp.get("Camera:RigRelatives"))
    return BandLens((focal, focal), (centre_mm[0] * px_per_mm, centre_mm[1] * px_per_mm), (k1, k2, p1, p2, k3),
                    turn=tuple(rig_turn(angles).ravel()) if len(angles) == 3 else None)


def rig_turn(degrees: tuple[float, ...]) -> np.ndarray:
    """The rotation Rx Ry Rz of MicaSense's RigRelatives angles (degrees)."""
    ax, ay, az = np.radians(degrees)
    rx = np.array([[1, 0, 0], [0, np.cos(ax), -np.sin(ax)], [0, np.sin(ax), np.cos(ax)]])
    ry = np.array([[np.cos(ay), 0, np.sin(ay)], [0, 1, 0], [-np.sin(ay), 0, np.cos(ay)]])
    rz = np.array([[np.cos(az), -np.sin(az), 0], [np.sin(az), np.cos(az), 0], [0, 0, 1]])
    return rx @ ry @ rz


def predicted_pixels(primary: BandLens, band: BandLens, pixels: np.ndarray) -> np.ndarray:
    """(N, 2) where the primary band's pixels (N, 2) fall in the band's frame, as the two lenses predict."""
    undistorted = cv2.undistortPoints(pixels.reshape(-1, 1, 2).astype(np.float64), primary.matrix(),
                                      np.array(primary.distortion), None, None, primary.matrix(),
                                      _UNDISTORT).reshape(-1, 2)
    if primary.to_reference is not None and band.to_reference is not None:
        onto_band = np.linalg.inv(np.reshape(band.to_reference, (3, 3))) @ np.reshape(primary.to_reference, (3, 3))
    elif primary.turn is not None and band.turn is not None:
        turn = np.reshape(band.turn, (3, 3)).T @ np.reshape(primary.turn, (3, 3))
        onto_band = band.matrix() @ turn @ np.linalg.inv(primary.matrix())
    else:  # cameras taken as looking the same way
        onto_band = band.matrix() @ np.linalg.inv(primary.matrix())
    rays = np.hstack([undistorted, np.ones((len(undistorted), 1))]) @ (np.linalg.inv(band.matrix()) @ onto_band).T
    projected, _ = cv2.projectPoints(rays, np.zeros(3), np.zeros(3), band.matrix(), np.array(band.distortion))
    return projected.reshape(-1, 2)


def stated_alignment(primary: BandLens, band: BandLens, primary_shape: tuple[int, int]) -> BandAlignment | None:
    """The alignment the two lenses predict, as a homography and the lenses' difference; None where that
    difference is too large to be the small one of a rig's matched lenses (the metadata are not to be trusted)."""
    h, w = primary_shape
    y, x = np.mgrid[0:h - 1:complex(0, GRID), 0:w - 1:complex(0, GRID)]
    pixels = np.column_stack([x.ravel(), y.ravel()])
    predicted = predicted_pixels(primary, band, pixels)
    homography, _ = cv2.findHomography(pixels, predicted, 0)
    if homography is None:
        return None
    # The field shifts primary pixels before the homography: the shift that lands each on its prediction.
    landed = cv2.perspectiveTransform(predicted.reshape(-1, 1, 2), np.linalg.inv(homography)).reshape(-1, 2)
    lens = fit_field(pixels, landed - pixels, primary_shape)
    if lens.largest() > MAX_FIELD_PX:
        return None
    return BandAlignment(homography / homography[2, 2], 0.0, lens, stated=True, lens_source="metadata")
