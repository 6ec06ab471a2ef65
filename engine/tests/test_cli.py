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
