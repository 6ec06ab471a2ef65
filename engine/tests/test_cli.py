"""The engine's command line ends every failure with an [ERROR] line, which the node shows as the task's error."""

from __future__ import annotations

import pytest

from aeromap_engine import cli
from aeromap_engine.tiles import pyramid


def test_an_unexpected_failure_still_ends_with_an_error_line(monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    def broken(*_args: object) -> None:
        raise RuntimeError("the disk vanished")

    monkeypatch.setattr(pyramid, "build_pyramid", broken)
    assert cli.main(["tiles", "in.tif", "out.mbtiles"]) == 1
    captured = capsys.readouterr()
    output = captured.out
    assert "Traceback" in output
    assert output.strip().splitlines()[-1] == "[ERROR] Internal error: RuntimeError: the disk vanished"


def test_crs_prints_the_epsg_code_or_else_the_wkt(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    import numpy as np
    import rasterio
    from rasterio.crs import CRS
    from rasterio.transform import from_origin

    local = CRS.from_proj4("+proj=tmerc +lat_0=0 +lon_0=3.3 +k=1 +x_0=1000 +y_0=0 +ellps=GRS80 +units=m")
    for name, crs in [("utm.tif", CRS.from_epsg(32615)), ("local.tif", local)]:
        with rasterio.open(tmp_path / name, "w", driver="GTiff", width=2, height=2, count=1, dtype="uint8", crs=crs,
                           transform=from_origin(576000, 4565000, 1, 1)) as out:
            out.write(np.zeros((1, 2, 2), dtype=np.uint8))
    assert cli.main(["crs", str(tmp_path / "utm.tif")]) == 0
    assert json.loads(capsys.readouterr().out) == {"epsg": 32615, "wkt": None}
    assert cli.main(["crs", str(tmp_path / "local.tif")]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["epsg"] is None and "Transverse_Mercator" in answer["wkt"]
    assert cli.main(["crs", str(tmp_path / "missing.tif")]) != 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("[ERROR] cannot read missing.tif")
