"""The local frame a tileset's content is written in: east, north, up at a point of the WGS 84 ellipsoid, moved
onto the globe (ECEF, EPSG:4978) by the tileset root's transform. Coordinates of the engine's CRS go to ECEF
through PROJ, their heights taken as ellipsoidal as everywhere in the engine (geo.transform), then into the
frame by one rotation: float32 offsets from a tile's centre then keep millimetres across a survey."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..geo import transform

ECEF = "EPSG:4978"
GEODETIC = "EPSG:4326"


@dataclass(frozen=True)
class LocalFrame:
    crs: str  # the CRS the frame takes coordinates from
    origin: np.ndarray  # (3,) ECEF metres
    axes: np.ndarray  # (3, 3) rows: the east, north and up unit vectors in ECEF

    def from_crs(self, xyz: np.ndarray) -> np.ndarray:
        """(N, 3) CRS coordinates as float64 east, north, up metres from the origin."""
        return (transform(self.crs, ECEF, xyz) - self.origin) @ self.axes.T

    def to_crs(self, enu: np.ndarray) -> np.ndarray:
        """(N, 3) east, north, up metres from the origin as coordinates of the CRS."""
        return transform(ECEF, self.crs, np.asarray(enu, np.float64) @ self.axes + self.origin)

    def crs_affine(self, low: np.ndarray, high: np.ndarray) -> list[float]:
        """The 4x4 affine matrix (column-major) closest to `to_crs` over the box from `low` to `high` (frame
        coordinates): how a viewer working in the CRS places the tileset without a projection library. The
        Earth's curvature (the frame's up leaves the ellipsoid's normal) bends what an affine map cannot
        follow: about a centimetre at 400 m from the origin, 8 cm at a kilometre."""
        corners = np.array(np.meshgrid(*[np.linspace(a, b, 3) for a, b in zip(low, high)])).reshape(3, -1).T
        source = np.column_stack([corners, np.ones(len(corners))])
        fit, *_ = np.linalg.lstsq(source, self.to_crs(corners), rcond=None)
        matrix = np.eye(4)
        matrix[:3] = fit.T
        return [float(v) for v in matrix.T.ravel()]

    @property
    def transform(self) -> list[float]:
        """The 4x4 matrix from the frame to ECEF, column-major as 3D Tiles stores a tile's transform."""
        matrix = np.eye(4)
        matrix[:3, :3] = self.axes.T
        matrix[:3, 3] = self.origin
        return [float(v) for v in matrix.T.ravel()]


def enu_axes(longitude: float, latitude: float) -> np.ndarray:
    """East, north and up (the ellipsoid's normal) in ECEF at a geodetic longitude and latitude in degrees."""
    lon, lat = np.radians(longitude), np.radians(latitude)
    return np.array([[-np.sin(lon), np.cos(lon), 0.0],
                     [-np.sin(lat) * np.cos(lon), -np.sin(lat) * np.sin(lon), np.cos(lat)],
                     [np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)]])


def frame_at(crs: str, center: np.ndarray) -> LocalFrame:
    """The east-north-up frame at a point given in the CRS (x, y, height)."""
    center = np.asarray(center, dtype=np.float64).reshape(1, 3)
    lon, lat, _ = transform(crs, GEODETIC, center)[0]
    return LocalFrame(crs, transform(crs, ECEF, center)[0], enu_axes(lon, lat))
