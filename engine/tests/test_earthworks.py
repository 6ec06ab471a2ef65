"""Earthworks on synthetic elevation models whose volumes are known: a cone stockpile on flat ground, a pit, a
stockpile on a slope, each over a circular polygon, against every base; contours of a sloping plane in every
format, read back through GDAL. The truth: the cone's volume (pi r^2 h / 3) and, for level bases over the slope,
the exact heights integrated on a grid a hundred times finer than the model's."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pyogrio
import pytest
import rasterio
from pyproj import Transformer
from rasterio.transform import from_origin

from aeromap_engine.cli import main
from aeromap_engine.earthworks.contours import contour_lines
from aeromap_engine.earthworks.difference import measure_difference
from aeromap_engine.earthworks.measure import volume_of
from aeromap_engine.errors import InputError
from aeromap_engine.io.lines import LINE_FORMATS

CRS = "EPSG:32633"
ORIGIN = (500_000.0, 5_700_060.0)  # the model's top-left corner
CELL = 0.1
SIDE = 60.0  # m
CENTRE = np.array([ORIGIN[0] + 30.0, ORIGIN[1] - 30.0])
RADIUS, HEIGHT, POLYGON_RADIUS = 10.0, 5.0, 15.0
CONE = np.pi * RADIUS**2 * HEIGHT / 3
SLOPE = np.array([0.1, 0.05])  # the ground's rise per metre east and north


def cone(x: np.ndarray, y: np.ndarray, sign: float = 1.0) -> np.ndarray:
    return sign * HEIGHT * np.clip(1 - np.hypot(x - CENTRE[0], y - CENTRE[1]) / RADIUS, 0, None)


def ground(x: np.ndarray, y: np.ndarray, sloped: bool) -> np.ndarray:
    return 100.0 + ((x - CENTRE[0]) * SLOPE[0] + (y - CENTRE[1]) * SLOPE[1] if sloped else 0.0)


def write_dem(path: Path, surface) -> Path:
    n = int(SIDE / CELL)
    cols, rows = np.meshgrid(np.arange(n) + 0.5, np.arange(n) + 0.5)
    heights = surface(ORIGIN[0] + cols * CELL, ORIGIN[1] - rows * CELL).astype(np.float32)
    with rasterio.open(path, "w", driver="GTiff", width=n, height=n, count=1, dtype="float32", crs=CRS,
                       transform=from_origin(*ORIGIN, CELL, CELL), nodata=-9999) as out:
        out.write(heights, 1)
    return path


def circle(radius: float, crs_to: str = "EPSG:4326") -> dict:
    angles = np.linspace(0, 2 * np.pi, 65)
    x, y = CENTRE[0] + radius * np.cos(angles), CENTRE[1] + radius * np.sin(angles)
    lon, lat = Transformer.from_crs(CRS, crs_to, always_xy=True).transform(x, y)
    return {"type": "Feature", "properties": {}, "geometry": {"type": "Polygon",
                                                              "coordinates": [np.column_stack([lon, lat]).tolist()]}}


def exact(surface, base: float) -> tuple[float, float]:
    """(cut, fill) of the surface over the polygon against a level base, integrated on a grid five times finer
    than the model's."""
    step = CELL / 5
    axis = np.arange(-POLYGON_RADIUS, POLYGON_RADIUS, step) + step / 2
    dx, dy = np.meshgrid(axis, axis)
    inside = np.hypot(dx, dy) <= POLYGON_RADIUS
    difference = surface(CENTRE[0] + dx[inside], CENTRE[1] + dy[inside]) - base
    return float(difference[difference > 0].sum() * step**2), float(-difference[difference < 0].sum() * step**2)


SURFACES = {
    "stockpile": (lambda x, y: ground(x, y, False) + cone(x, y), False),
    "pit": (lambda x, y: ground(x, y, False) + cone(x, y, -1.0), False),
    "slope": (lambda x, y: ground(x, y, True) + cone(x, y), True),
}


@pytest.mark.parametrize("name", SURFACES)
def test_every_base_measures_the_known_volume(tmp_path: Path, name: str) -> None:
    surface, sloped = SURFACES[name]
    dem = write_dem(tmp_path / "dem.tif", surface)
    sign = -1.0 if name == "pit" else 1.0
    # Bases that follow the ground under the polygon: the cone alone.
    for method in ("plane", "triangulate"):
        found = volume_of(dem, circle(POLYGON_RADIUS), method)
        assert found["net"] == pytest.approx(sign * CONE, rel=0.01), (method, found)
        assert (found["cut"] if sign > 0 else found["fill"]) == pytest.approx(CONE, rel=0.01)
    # Level bases: the ground's own rise across the polygon counts too.
    rise = np.hypot(*SLOPE) * POLYGON_RADIUS if sloped else 0.0
    for method, base in (("average", 100.0), ("highest", 100.0 + rise), ("lowest", 100.0 - rise)):
        found = volume_of(dem, circle(POLYGON_RADIUS), method)
        cut, fill = exact(surface, base)
        assert found["base_mean"] == pytest.approx(base, abs=0.02), method
        assert found["cut"] == pytest.approx(cut, rel=0.01, abs=0.01 * CONE), (method, found, cut)
        assert found["fill"] == pytest.approx(fill, rel=0.01, abs=0.01 * CONE), (method, found, fill)
    custom = volume_of(dem, circle(POLYGON_RADIUS), "custom", 99.0)
    cut, fill = exact(surface, 99.0)
    assert custom["net"] == pytest.approx(cut - fill, rel=0.01)


def test_volume_refuses_what_it_cannot_measure(tmp_path: Path) -> None:
    dem = write_dem(tmp_path / "dem.tif", SURFACES["stockpile"][0])
    with pytest.raises(InputError, match="custom base needs its height"):
        volume_of(dem, circle(POLYGON_RADIUS), "custom")
    with pytest.raises(InputError, match="Unknown base"):
        volume_of(dem, circle(POLYGON_RADIUS), "median")
    with pytest.raises(InputError, match="GeoJSON Polygon"):
        volume_of(dem, {"type": "Point", "coordinates": [0, 0]}, "plane")
    far = {"type": "Polygon", "coordinates": [[[0, 0], [0.001, 0], [0.001, 0.001], [0, 0]]]}
    with pytest.raises(InputError, match="outside the elevation model"):
        volume_of(dem, far, "plane")


def test_the_volume_command_writes_its_figures(tmp_path: Path) -> None:
    dem = write_dem(tmp_path / "dem.tif", SURFACES["stockpile"][0])
    out = tmp_path / "volume.json"
    assert main(["volume", str(dem), str(out), "--area", json.dumps(circle(POLYGON_RADIUS)),
                 "--base-method", "plane"]) == 0
    figures = json.loads(out.read_text())
    assert figures["volume"] == figures["net"] == pytest.approx(CONE, rel=0.01)
    assert figures["area"] == pytest.approx(np.pi * POLYGON_RADIUS**2, rel=0.01) and figures["base"] == "plane"


def test_contours_of_a_slope_lie_ten_metres_apart_in_every_format(tmp_path: Path) -> None:
    """A 10 % slope eastwards at a 1 m interval: straight lines north to south, 10 m apart, within a cell."""
    dem = write_dem(tmp_path / "slope.tif", lambda x, y: 100.0 + 0.1 * (x - ORIGIN[0]))
    for fmt, (_, extension) in LINE_FORMATS.items():
        for crs in (None, "EPSG:4326"):
            out = tmp_path / f"contours-{extension}-{crs is None}.{extension}"
            args = ["contours", str(dem), str(out), "--interval", "1", "--simplify", "0.05", "--format", fmt]
            assert main(args + (["--crs", crs] if crs else [])) == 0
            source = f"/vsizip/{out}/contours.shp" if extension == "zip" else str(out)
            if extension == "zip":
                assert {Path(n).suffix for n in zipfile.ZipFile(out).namelist()} >= {".shp", ".shx", ".dbf", ".prj"}
            _, _, geometry, fields = pyogrio.raw.read(source)
            assert len(geometry) == 5, fmt  # heights from 100 to 106 m: the lines at 101 to 105 m
            back = Transformer.from_crs(crs or CRS, CRS, always_xy=True)
            for wkb in geometry:
                xyz = np.frombuffer(wkb[9:], "<f8").reshape(-1, 3)
                x, y = back.transform(xyz[:, 0], xyz[:, 1])
                level = xyz[0, 2]
                assert np.all(xyz[:, 2] == level) and float(level).is_integer()
                expected = ORIGIN[0] + (level - 100.0) / 0.1
                assert np.abs(np.asarray(x) - expected).max() < CELL, (fmt, crs, level)
                assert np.ptp(y) > SIDE - 2 * CELL  # across the whole model
            if fmt != "DXF":
                assert sorted(fields[0]) == [101.0, 102.0, 103.0, 104.0, 105.0], fmt


def test_contours_refuse_a_mistaken_interval() -> None:
    heights = np.array([[0.0, 1.0], [2.0, np.nan]])
    with pytest.raises(InputError, match="positive"):
        contour_lines(heights, np.arange(2.0), np.arange(2.0), 0)
    with pytest.raises(InputError, match="choose a larger interval"):
        contour_lines(heights * 1000, np.arange(2.0), np.arange(2.0), 0.001)


def test_an_excavation_between_two_surveys_is_its_cut(tmp_path: Path) -> None:
    """A 20 x 10 m pit 2 m deep dug between two surveys of a slope (400 m3), the later one on a grid shifted by
    half a cell and coarser, with 2 cm of noise each: the cut within 1 %, the rest unchanged."""
    rng = np.random.default_rng(5)

    def pit_depth(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        inside = (np.abs(x - CENTRE[0]) < 10) & (np.abs(y - CENTRE[1]) < 5)
        return np.where(inside, 2.0, 0.0)

    earlier = write_dem(tmp_path / "earlier.tif", lambda x, y: ground(x, y, True) + rng.normal(0, 0.02, x.shape))
    n = int(SIDE / 0.2) - 2
    cols, rows = np.meshgrid(np.arange(n) + 0.5, np.arange(n) + 0.5)
    x, y = ORIGIN[0] + 0.05 + cols * 0.2, ORIGIN[1] - 0.05 - rows * 0.2
    later_heights = ground(x, y, True) - pit_depth(x, y) + rng.normal(0, 0.02, x.shape)
    later = tmp_path / "later.tif"
    with rasterio.open(later, "w", driver="GTiff", width=n, height=n, count=1, dtype="float32", crs=CRS,
                       transform=from_origin(ORIGIN[0] + 0.05, ORIGIN[1] - 0.05, 0.2, 0.2)) as out:
        out.write(later_heights.astype(np.float32), 1)
    raster, figures_file = tmp_path / "change.tif", tmp_path / "change.json"
    assert main(["difference", str(earlier), str(later), str(raster), "--noise", "0.1"]) == 0
    assert main(["difference", str(earlier), str(later), str(figures_file), "--noise", "0.1"]) == 0
    found = json.loads(figures_file.read_text())
    assert found["cut"] == pytest.approx(400.0, rel=0.01) and found["fill"] < 1.0
    assert found["net"] == pytest.approx(-400.0, rel=0.01)
    assert found["changed_area"] == pytest.approx(200.0, rel=0.03)
    with rasterio.open(raster) as change:
        assert change.descriptions[0] == "height change (m)" and float(change.tags()["CUT"]) == found["cut"]
        values = change.read(1)
        transform = change.transform
    with rasterio.open(earlier) as base:
        assert transform == base.transform  # on the earlier model's grid
    inside = values[np.abs(values + 2) < 0.2].size * CELL**2
    assert inside == pytest.approx(200.0, rel=0.03) and np.nanmedian(np.abs(values)) < 0.05


def test_models_that_do_not_overlap_have_no_difference(tmp_path: Path) -> None:
    earlier = write_dem(tmp_path / "earlier.tif", lambda x, y: ground(x, y, False) + 0 * x)
    far = tmp_path / "far.tif"
    with rasterio.open(far, "w", driver="GTiff", width=10, height=10, count=1, dtype="float32", crs=CRS,
                       transform=from_origin(ORIGIN[0] + 1000, ORIGIN[1], 1, 1)) as out:
        out.write(np.zeros((10, 10), np.float32), 1)
    with pytest.raises(InputError, match="do not overlap"):
        measure_difference(earlier, far, 0.0)
