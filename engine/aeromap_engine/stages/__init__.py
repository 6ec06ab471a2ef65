"""Pipeline stages, in ODM's order and with ODM's names.

A stage is a module with `run(ctx: StageContext) -> None`, `OPTIONS: list[Option]` and `WEIGHT` (its rough share
of a run's time, for progress). split and merge have work only when a survey is split into submodels.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ..project import STAGE_NAMES

# Stage name -> module (in this package) that does its work.
_MODULES: dict[str, str] = {
    "dataset": "dataset",
    "split": "split",
    "merge": "merge",
    "opensfm": "opensfm",
    "openmvs": "openmvs",
    "odm_filterpoints": "odm_filterpoints",
    "odm_meshing": "odm_meshing",
    "mvs_texturing": "mvs_texturing",
    "odm_georeferencing": "odm_georeferencing",
    "odm_dem": "odm_dem",
    "odm_orthophoto": "odm_orthophoto",
    "odm_report": "odm_report",
    "odm_postprocess": "odm_postprocess",
}


def implemented_stages() -> dict[str, ModuleType]:
    """Stage name -> module, for the stages that have work to do, in pipeline order."""
    return {
        name: importlib.import_module(f".{_MODULES[name]}", __name__) for name in STAGE_NAMES if name in _MODULES
    }
