"""The reconstruction's world frame, shared by every stage after structure from motion.

Coordinates inside the engine are `projected CRS minus offset`: X = easting - offset[0], Y = northing - offset[1],
Z = altitude in metres (as the GPS or ground control gives it, no offset). The offset keeps float32 and
float64 math precise near the model; it is added back when outputs are written in the CRS. A dataset without
any position source is reconstructed in a local frame: `crs` is None and outputs carry no CRS.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .files import read_json, write_json
from .project import Project

GeorefSource = Literal["gps", "gcp", "none"]


@dataclass(frozen=True)
class Georef:
    crs: str | None  # "EPSG:32630" for UTM 30N; None for a local, non-georeferenced frame
    offset: tuple[float, float]
    source: GeorefSource

    @property
    def georeferenced(self) -> bool:
        return self.crs is not None

    @staticmethod
    def path(project: Project):
        return project.path("opensfm", "georef.json")

    def save(self, project: Project) -> None:
        write_json(self.path(project), {"crs": self.crs, "offset": list(self.offset), "source": self.source})

    @classmethod
    def load(cls, project: Project) -> "Georef":
        data = read_json(cls.path(project))
        if data is None:
            raise FileNotFoundError(f"{cls.path(project)} is missing: run the opensfm stage first")
        return cls(data["crs"], (float(data["offset"][0]), float(data["offset"][1])), data["source"])
