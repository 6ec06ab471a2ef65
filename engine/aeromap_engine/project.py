"""The project folder: one object that knows where every input, intermediate and output lives (ODM's layout)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .files import read_json, write_json

IMAGE_EXTENSIONS = {".jpg", ".jpeg", ".png", ".tif", ".tiff"}


@dataclass(frozen=True)
class Project:
    root: Path

    @property
    def images_dir(self) -> Path:
        return self.root / "images"

    @property
    def gcp_file(self) -> Path:
        return self.root / "gcp_list.txt"

    @property
    def geo_file(self) -> Path:
        return self.root / "geo.txt"

    @property
    def images_json(self) -> Path:
        """The photographs that passed the dataset stage and their metadata (ODM's format)."""
        return self.root / "images.json"

    @property
    def state_dir(self) -> Path:
        """Engine bookkeeping: stage completion markers and the options of the last successful run."""
        return self.root / ".aeromap"

    @property
    def radiometry_file(self) -> Path:
        """The dataset's levels, one stretch to 8 bits for photographs that are not 8-bit (io/images.py); absent
        when all are."""
        return self.state_dir / "radiometry.json"

    @property
    def photometry_file(self) -> Path:
        """Each camera's vignetting and each photograph's exposure gains, estimated with the sparse model
        (photometry.py)."""
        return self.path("opensfm", "photometry.json")

    @property
    def report_dir(self) -> Path:
        return self.root / "odm_report"

    @property
    def stats_file(self) -> Path:
        return self.report_dir / "stats.json"

    @property
    def submodels_dir(self) -> Path:
        """Where a split survey's submodels live, each a project of its own (ODM's layout)."""
        return self.root / "submodels"

    @property
    def submodel_plan(self) -> Path:
        """The submodels of a split run and the cameras each owns; absent when the survey is not split."""
        return self.submodels_dir / "plan.json"

    def submodel(self, name: str) -> "Project":
        return Project(self.submodels_dir / name)

    def path(self, *parts: str) -> Path:
        return self.root.joinpath(*parts)

    def image_files(self) -> list[Path]:
        """Input files that look like images by name (masks excluded, as in ODM); content is checked later."""
        if not self.images_dir.is_dir():
            return []
        return sorted(
            p
            for p in self.images_dir.iterdir()
            if p.is_file() and p.suffix.lower() in IMAGE_EXTENSIONS and not p.stem.endswith("_mask")
        )

    def read_stats(self) -> dict[str, Any]:
        return read_json(self.stats_file, {}) or {}

    def update_stats(self, section: str, values: dict[str, Any]) -> None:
        """Merge one section of odm_report/stats.json (each stage owns its sections)."""
        stats = self.read_stats()
        stats[section] = values
        write_json(self.stats_file, stats)
