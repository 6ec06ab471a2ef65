"""The project folder: one object that knows where every input, intermediate and output lives (ODM's layout)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .atomic_files import read_json, write_json
from .io.raw import RAW_EXTENSIONS

IMAGE_EXTENSIONS = {".jpg", ".jpeg", ".png", ".tif", ".tiff", *RAW_EXTENSIONS}
VIDEO_EXTENSIONS = {".mp4", ".mov", ".avi"}

# The stages of a run, in ODM's order and with ODM's names (most name the folder their products go to).
STAGE_NAMES: tuple[str, ...] = (
    "dataset",
    "split",
    "merge",
    "opensfm",
    "openmvs",
    "odm_filterpoints",
    "odm_meshing",
    "mvs_texturing",
    "odm_georeferencing",
    "odm_dem",
    "odm_orthophoto",
    "odm_report",
    "odm_postprocess",
)


ALIGN_FILES = ("align.laz", "align.las", "align.tif")


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
    def ancillary_dir(self) -> Path:
        """The files other than photographs uploaded with a task (image_groups.txt, ...): the node keeps them here."""
        return self.root / "gcp"

    def alignment_reference(self, named: str) -> Path | None:
        """The earlier survey to align to: the file the align option names, else an align.laz, align.las or
        align.tif uploaded with the task (ODM's names); None where there is none."""
        if named:
            return self.uploaded_file(named)
        return next((path for name in ALIGN_FILES if (path := self.uploaded_file(name)) is not None), None)

    def uploaded_file(self, name: str) -> Path | None:
        """The file an option names: a bare file name (no folder, so that no option reaches outside the project)
        uploaded with the task, found in ancillary_dir, then images_dir, then the project's root; None when it
        is not a bare name or no such file is there."""
        if not name or name in (".", "..") or Path(name).name != name or "\\" in name:
            return None
        found = (folder / name for folder in (self.ancillary_dir, self.images_dir, self.root))
        return next((path for path in found if path.is_file()), None)

    @property
    def images_json(self) -> Path:
        """The photographs that passed the dataset stage and their metadata (ODM's format)."""
        return self.root / "images.json"

    @property
    def bands_file(self) -> Path:
        """A multispectral survey's captures: every band's file of each, what each records of its radiometry
        (bands/groups.py, bands/radiometry.py); absent for other surveys."""
        return self.root / "bands.json"

    @property
    def temperatures_dir(self) -> Path:
        """A thermal survey's temperatures in °C, a float32 TIFF per photograph (bands/thermal.py)."""
        return self.root / "temperatures"

    def band_files_dir(self, bands: dict) -> Path:
        """Where the files bands.json names are: the temperatures of a thermal survey, else the photographs."""
        return self.temperatures_dir if bands.get("temperatures") else self.images_dir

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
        (photometry/)."""
        return self.path("opensfm", "photometry.json")

    @property
    def reconstruction_dir(self) -> Path:
        """The sparse model (COLMAP's binary format), in the world frame."""
        return self.path("opensfm", "reconstruction")

    @property
    def sparse_cloud(self) -> Path:
        return self.path("opensfm", "sparse.ply")

    @property
    def dense_cloud(self) -> Path:
        return self.path("openmvs", "scene_dense.ply")

    @property
    def filtered_cloud(self) -> Path:
        """The dense cloud cleaned and cropped to the surveyed area, tiled (cloud/tiled.py), in the world frame."""
        return self.path("odm_filterpoints", "point_cloud.ply")

    @property
    def bounds_file(self) -> Path:
        """The surveyed area's outline (GeoJSON, in the CRS)."""
        return self.path("odm_filterpoints", "bounds.geojson")

    def mesh(self, three_d: bool) -> Path:
        return self.path("odm_meshing", "odm_mesh.ply" if three_d else "odm_25dmesh.ply")

    def texturing_dir(self, three_d: bool) -> Path:
        """The textured model of the 3D mesh (the one the assets and 3D Tiles offer) or of the 2.5D one."""
        return self.path("odm_texturing" if three_d else "odm_texturing_25d")

    @property
    def safe_model(self) -> Path:
        """The textured model reduced for phones (GLB, georeferenced), written beside the model's 3D Tiles."""
        return self.path("odm_texturing", "odm_textured_model_geo_safe.glb")

    def georeferenced_model(self, extension: str) -> Path:
        """The point cloud in the CRS, in the format that `extension` names (laz, las, csv, copc.laz, ply)."""
        return self.path("odm_georeferencing", f"odm_georeferenced_model.{extension}")

    @property
    def control_points_geojson(self) -> Path:
        """The ground control points that georeferenced the model, with their residuals (WGS84 GeoJSON)."""
        return self.path("odm_georeferencing", "ground_control_points.geojson")

    @property
    def coords_file(self) -> Path:
        return self.path("odm_georeferencing", "coords.txt")

    def dem(self, kind: str) -> Path:
        """The elevation model of `kind` (dsm or dtm)."""
        return self.path("odm_dem", f"{kind}.tif")

    def orthophoto(self, extension: str = "tif") -> Path:
        return self.path("odm_orthophoto", f"odm_orthophoto.{extension}")

    @property
    def orthophoto_cutline(self) -> Path:
        """The polygon the orthophoto is cut to (GeoPackage, in the CRS)."""
        return self.path("odm_orthophoto", "cutline.gpkg")

    def tiles_dir(self, layer: str) -> Path:
        """The static map tiles (TMS folders of PNGs) of a layer: orthophoto, dsm or dtm."""
        return self.root / f"{layer}_tiles"

    @property
    def orthophoto_sources(self) -> Path:
        """Which photograph colours each orthophoto pixel: its index in the `images` tag (a JSON list of names),
        NO_SOURCE (ortho/render.py) where none; the seamlines run where the index changes."""
        return self.path("odm_orthophoto", "odm_orthophoto_sources.tif")

    @property
    def tiles3d_dir(self) -> Path:
        return self.root / "3d_tiles"

    def tiles3d(self, kind: str) -> Path:
        """The OGC 3D Tiles tileset of `kind` (model or pointcloud): a folder holding tileset.json and its
        contents."""
        return self.tiles3d_dir / kind

    @property
    def report_dir(self) -> Path:
        return self.root / "odm_report"

    @property
    def report_file(self) -> Path:
        return self.report_dir / "report.pdf"

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

    def video_files(self) -> list[Path]:
        """Input videos, whose frames the dataset stage writes into images_dir."""
        if not self.images_dir.is_dir():
            return []
        return sorted(p for p in self.images_dir.iterdir() if p.is_file() and p.suffix.lower() in VIDEO_EXTENSIONS)

    @property
    def video_frames_file(self) -> Path:
        """The frames written from the videos, by video: removed before they are written again."""
        return self.state_dir / "video_frames.json"

    @property
    def panorama_faces_file(self) -> Path:
        """The faces written from the 360° panoramas, by panorama: removed before they are written again."""
        return self.state_dir / "panorama_faces.json"

    def image_files(self) -> list[Path]:
        """Input files that look like images by name (masks excluded, as in ODM); content is checked later."""
        if not self.images_dir.is_dir():
            return []
        return sorted(
            p
            for p in self.images_dir.iterdir()
            if p.is_file() and p.suffix.lower() in IMAGE_EXTENSIONS and not p.stem.endswith("_mask")
        )

    def stage_marker(self, stage: str) -> Path:
        """Present once the stage has finished; holds its time and peak memory."""
        return self.state_dir / f"{stage}.done"

    def mark_done(self, stage: str, seconds: float = 0.0, peak_memory_mb: float = 0.0) -> None:
        write_json(self.stage_marker(stage), {"seconds": seconds, "peak_memory_mb": peak_memory_mb})

    def stage_records(self, stages: tuple[str, ...] = STAGE_NAMES) -> dict[str, dict[str, float]]:
        """Time and peak memory of those of `stages` that have finished, in pipeline order."""
        records = {}
        for name in stages:
            record = read_json(self.stage_marker(name))
            if record is not None:
                records[name] = record
        return records

    def mean_gsd_cm(self) -> float | None:
        """The photographs' mean ground sample distance, once structure from motion has measured it."""
        return self.read_stats().get("reconstruction", {}).get("gsd_cm")

    def read_stats(self) -> dict[str, Any]:
        return read_json(self.stats_file, {}) or {}

    def update_stats(self, section: str, values: dict[str, Any]) -> None:
        """Merge one section of odm_report/stats.json (each stage owns its sections)."""
        stats = self.read_stats()
        stats[section] = values
        write_json(self.stats_file, stats)
