"""The CRS an export is written in: the product's own, an EPSG code, or a PROJ string; and how finely each kind
of coordinate is stored. Pure: no file is read here."""

from __future__ import annotations

import pyproj

from ..errors import InputError


def target_crs(epsg: int | None, proj: str | None) -> pyproj.CRS | None:
    """The CRS asked for (None: the product's own). InputError for both at once, an EPSG code PROJ does not
    know, a PROJ string it cannot read, and a CRS that places nothing on a map (a vertical one, say)."""
    if epsg is not None and proj is not None:
        raise InputError("Give epsg or proj, not both")
    if epsg is not None:
        try:
            return pyproj.CRS.from_epsg(epsg)
        except pyproj.exceptions.CRSError:
            raise InputError(f"Invalid EPSG code: {epsg} is not a coordinate reference system PROJ knows") from None
    if proj is None:
        return None
    try:
        crs = pyproj.CRS.from_user_input(proj.strip())
    except pyproj.exceptions.CRSError as exc:
        raise InputError(f"Invalid PROJ string {proj!r}: {exc}") from None
    if not (crs.is_projected or crs.is_geographic):
        raise InputError(f"Invalid PROJ string {proj!r}: it is not a horizontal coordinate reference system")
    return crs


def is_angular(crs: pyproj.CRS) -> bool:
    """Whether the CRS's horizontal axes are in degrees (a geographic CRS) rather than metres or feet."""
    return crs.is_geographic


def coordinate_step(crs: pyproj.CRS) -> float:
    """The stored step of a horizontal coordinate: 1 mm, or about 1 mm in degrees (1e-8° is 1.1 mm of
    latitude)."""
    return 1e-8 if is_angular(crs) else 0.001


def decimals(crs: pyproj.CRS) -> int:
    """Decimals of a coordinate written as text, to the step coordinate_step keeps."""
    return 8 if is_angular(crs) else 3
