"""Products made elsewhere (external/): ODM's real point cloud of Brighton Beach and GeoTIFFs in UTM written
here, laid out as a task's results (the LAZ as it came, a COPC of every point in its CRS, the extent in degrees
in stats.json), and each kind of wrong file refused with its reason before anything is written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import laspy
import numpy as np
import pytest
import rasterio
from pyproj import Transformer
from rasterio.transform import from_origin

from aeromap_engine.cli import main
from aeromap_engine.external.assemble import assemble, problems
from aeromap_engine.external.products import RasterHeader, model_problem, point_cloud_problem, raster_problem

ORIGIN = (576000.0, 5188200.0)  # UTM 15N, near Brighton Beach's cloud


def _geotiff(path: Path, bands: int, crs: str | None = "EPSG:32615", size: int = 40) -> Path:
    values = np.tile(np.arange(size, dtype=np.float32), (bands, size, 1))
    with rasterio.open(path, "w", driver="GTiff", width=size, height=size, count=bands, dtype="float32",
                       crs=crs, transform=from_origin(*ORIGIN, 0.5, 0.5)) as out:
        out.write(values)
    return path


def test_raster_rules() -> None:
    assert raster_problem("dsm", RasterHeader(1, True, 100, 100)) is None
    assert raster_problem("dtm", RasterHeader(2, True, 100, 100)) is None  # height and alpha
    assert "3 bands" in raster_problem("dsm", RasterHeader(3, True, 100, 100))
    assert raster_problem("orthophoto", RasterHeader(4, True, 100, 100)) is None
    assert "coordinate reference system" in raster_problem("orthophoto", RasterHeader(4, False, 100, 100))
    assert "too small" in raster_problem("orthophoto", RasterHeader(3, True, 1, 100))


def test_file_signatures() -> None:
    assert point_cloud_problem(b"LASF", 10) is None
    assert "LASF" in point_cloud_problem(b"\xff\xd8\xff\xe0", 0)
    assert "no points" in point_cloud_problem(b"LASF", 0)
    assert model_problem(b"glTF\x02\x00\x00\x00") is None
    assert "glTF" in model_problem(b"{\"as")


def test_brighton_cloud_and_rasters_become_results(datasets: Path, tmp_path: Path) -> None:
    staged = tmp_path / "staged"
    staged.mkdir()
    source = datasets / "brighton_beach" / "model.laz"
    shutil.copyfile(source, staged / "georeferenced_model.laz")
    _geotiff(staged / "orthophoto.tif", 4)
    _geotiff(staged / "dsm.tif", 1)
    assert problems(staged) == []
    results = tmp_path / "results"
    assemble(staged, results)

    laz = results / "odm_georeferencing" / "odm_georeferenced_model.laz"
    assert laz.read_bytes() == source.read_bytes()
    with laspy.open(source) as original, laspy.open(results / "odm_georeferencing"
                                                    / "odm_georeferenced_model.copc.laz") as copc:
        assert copc.header.point_count == original.header.point_count
        assert copc.header.parse_crs().to_epsg() == 32615
        assert [v.user_id for v in copc.header.vlrs][0] == "copc"
        assert np.allclose(copc.header.mins, original.header.mins, atol=0.01)
        assert np.allclose(copc.header.maxs, original.header.maxs, atol=0.01)
    stats = json.loads((results / "odm_report" / "stats.json").read_text())
    # The 20 m square's corners in degrees: the box around them (a UTM square is not one in degrees).
    lon, lat = Transformer.from_crs("EPSG:32615", "EPSG:4326", always_xy=True).transform(
        ORIGIN[0] + np.array([0, 20, 0, 20]), ORIGIN[1] - np.array([0, 0, 20, 20]))
    box = [lon.min(), lat.min(), lon.max(), lat.max()]
    assert stats["orthophoto"]["bounds_wgs84"] == pytest.approx(box, abs=2e-7)
    assert stats["dem"]["bounds_wgs84"] == pytest.approx(box, abs=2e-7)
    with laspy.open(source) as original:
        assert stats["point_cloud_statistics"]["stats"]["statistic"][0]["count"] == original.header.point_count
    with rasterio.open(results / "odm_dem" / "dsm.tif") as dsm:
        assert dsm.crs.to_epsg() == 32615 and dsm.read(1)[0, 7] == 7


def test_a_las_file_is_written_compressed(datasets: Path, tmp_path: Path) -> None:
    staged = tmp_path / "staged"
    staged.mkdir()
    cloud = laspy.read(datasets / "brighton_beach" / "model.laz")
    cloud.points = cloud.points[:5000]
    cloud.write(staged / "georeferenced_model.laz", do_compress=False)  # a LAS under the asset's name
    assemble(staged, tmp_path / "results")
    with laspy.open(tmp_path / "results" / "odm_georeferencing" / "odm_georeferenced_model.laz") as written:
        assert written.header.are_points_compressed
        assert written.header.point_count == 5000


def test_a_lasers_intensities_and_classes_reach_the_copc(datasets: Path, tmp_path: Path) -> None:
    staged = tmp_path / "staged"
    staged.mkdir()
    cloud = laspy.read(datasets / "brighton_beach" / "model.laz")
    cloud.points = cloud.points[:20000]
    z = np.asarray(cloud.z)
    cloud.intensity = ((z - z.min()) / np.ptp(z) * 60000).astype(np.uint16)
    cloud.classification = np.where(z < np.median(z), 2, 5).astype(np.uint8)  # ground and high vegetation
    cloud.write(staged / "georeferenced_model.laz")
    assemble(staged, tmp_path / "results")
    copc = laspy.read(tmp_path / "results" / "odm_georeferencing" / "odm_georeferenced_model.copc.laz")
    # The octree orders the points its own way: each point's height still tells its intensity and class.
    order, copc_order = np.lexsort((cloud.y, cloud.x, z)), np.lexsort((copc.y, copc.x, copc.z))
    assert np.allclose(np.asarray(copc.z)[copc_order], z[order], atol=0.002)
    assert np.array_equal(np.asarray(copc.intensity)[copc_order], np.asarray(cloud.intensity)[order])
    assert np.array_equal(np.asarray(copc.classification)[copc_order], np.asarray(cloud.classification)[order])


def test_wrong_products_are_refused_with_their_reasons(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    staged = tmp_path / "staged"
    staged.mkdir()
    assert problems(staged) == ["nothing was uploaded: send an orthophoto, DSM, DTM, point cloud or textured model"]
    _geotiff(staged / "dsm.tif", 3)
    _geotiff(staged / "orthophoto.tif", 3, crs=None)
    (staged / "georeferenced_model.laz").write_bytes(b"\xff\xd8\xff\xe0 a JPEG")
    (staged / "textured_model.glb").write_text('{"asset": {"version": "2.0"}}')
    (staged / "dtm.tif").write_text("not a GeoTIFF")
    found = problems(staged)
    assert len(found) == 5
    assert any("dsm has 3 bands" in p for p in found)
    assert any("orthophoto has no coordinate reference system" in p for p in found)
    assert any("not a LAS or LAZ file" in p for p in found)
    assert any("not a binary glTF" in p for p in found)
    assert any("dtm is not a GeoTIFF" in p for p in found)
    assert main(["external", str(staged), str(tmp_path / "results")]) == 3
    assert not (tmp_path / "results").exists()
    assert len(json.loads(capsys.readouterr().out.strip().splitlines()[0])["problems"]) == 5
