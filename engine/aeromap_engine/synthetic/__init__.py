"""Synthetic drone surveys with exact truth: a known scene, rendered as a real survey's photographs (JPEG, EXIF,
DJI's XMP, GPS with a receiver's noise), with the true DSM, DTM, orthophoto, camera poses and control points
beside them, to measure the engine's products against.

    truth = generate(Path("survey"), SurveySpec())

Modules: scene.py (the height field and its objects), texture.py (albedo and facades), camera.py (lens, poses,
flight plan), render.py (ray casting and shading), site.py (the survey asked for, placed on the Earth),
metadata.py (the photographs' EXIF and XMP), truth.py (the truth files), survey.py (all of it written to disk).
"""

from .camera import FlightSpec, Lens, LensSpec, Pose
from .metadata import Photograph
from .scene import SceneSpec
from .site import SurveySpec
from .survey import SurveyTruth, generate
from .truth import ControlPoint

__all__ = ["ControlPoint", "FlightSpec", "Lens", "LensSpec", "Photograph", "Pose", "SceneSpec", "SurveySpec",
           "SurveyTruth", "generate"]
