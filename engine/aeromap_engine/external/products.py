"""What an imported product must be, and where it goes among a task's results: pure rules over what the files'
headers say, so that a wrong file is refused with its reason before anything is stored."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Kind:
    """A product that can be imported: the name the service stages it as (the asset's name on WebODM's API,
    whatever the file's extension was) and its path in the task's results (ODM's)."""

    asset: str
    result: str


KINDS: dict[str, Kind] = {
    "orthophoto": Kind("orthophoto.tif", "odm_orthophoto/odm_orthophoto.tif"),
    "dsm": Kind("dsm.tif", "odm_dem/dsm.tif"),
    "dtm": Kind("dtm.tif", "odm_dem/dtm.tif"),
    "pointcloud": Kind("georeferenced_model.laz", "odm_georeferencing/odm_georeferenced_model.laz"),
    "texturedmodel": Kind("textured_model.glb", "odm_texturing/odm_textured_model_geo.glb"),
}
ELEVATIONS = ("dsm", "dtm")


@dataclass(frozen=True)
class RasterHeader:
    bands: int
    has_crs: bool
    width: int
    height: int


def raster_problem(kind: str, header: RasterHeader) -> str | None:
    """Why a GeoTIFF cannot be the product `kind`, or None."""
    if not header.has_crs:
        return f"the {kind} has no coordinate reference system: only georeferenced GeoTIFFs can be placed on the map"
    if header.width < 2 or header.height < 2:
        return f"the {kind} is {header.width} x {header.height} pixels: too small to be a map"
    if kind in ELEVATIONS and header.bands > 2:
        return f"the {kind} has {header.bands} bands: an elevation model has one (and at most an alpha band)"
    return None


def point_cloud_problem(signature: bytes, points: int) -> str | None:
    """Why a LAS/LAZ file cannot be the point cloud, or None (one without a CRS is still seen in 3D)."""
    if signature[:4] != b"LASF":
        return "the point cloud is not a LAS or LAZ file (its first bytes are not LASF)"
    if points == 0:
        return "the point cloud holds no points"
    return None


def model_problem(signature: bytes) -> str | None:
    """Why a file cannot be the textured model (binary glTF), or None."""
    return None if signature[:4] == b"glTF" else "the textured model is not a binary glTF (.glb) file"
