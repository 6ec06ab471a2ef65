"""The reconstruction's world frame, shared by every stage after structure from motion.

Coordinates inside the engine are `projected CRS minus offset`: X = easting - offset[0], Y = northing - offset[1],
Z = altitude in metres (as the GPS or ground control gives it, no offset). The offset keeps float32 and
float64 math precise near the model; it is added back when outputs are written in the CRS. A dataset without
any position source is reconstructed in a local frame: `crs` is None and outputs carry no CRS.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from .atomic_files import read_json, write_json
from .geo import transform
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

    def wgs84_bounds(self, bounds: tuple[float, float, float, float]) -> list[float] | None:
        """[west, south, east, north] in degrees of engine-frame bounds (minx, miny, maxx, maxy), as the service
        reports a task's extent; None in a local frame. The corners and edge midpoints are transformed, so the
        box holds the whole area although a projected rectangle is not one in degrees."""
        if self.crs is None:
            return None
        minx, miny, maxx, maxy = bounds
        xs = np.array([minx, (minx + maxx) / 2, maxx]) + self.offset[0]
        ys = np.array([miny, (miny + maxy) / 2, maxy]) + self.offset[1]
        gx, gy = np.meshgrid(xs, ys)
        lonlat = transform(self.crs, "EPSG:4326", np.column_stack([gx.ravel(), gy.ravel(), np.zeros(gx.size)]))
        return [round(float(v), 8) for v in (lonlat[:, 0].min(), lonlat[:, 1].min(), lonlat[:, 0].max(),
                                              lonlat[:, 1].max())]

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
