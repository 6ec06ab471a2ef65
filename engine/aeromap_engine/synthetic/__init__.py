"""Synthetic drone surveys with exact truth: a known scene, rendered as a real survey's photographs (JPEG, EXIF,
DJI's XMP, GPS with a receiver's noise), with the true DSM, DTM, orthophoto, camera poses and control points
beside them, to measure the engine's products against.

    truth = generate(Path("survey"), SurveySpec())

Modules: scene.py (the height field and its objects), texture.py (albedo and facades), camera.py (lens, poses,
flight plan), render.py (ray casting and shading), survey.py (files).
"""

from .camera import FlightSpec, Lens, LensSpec, Pose
from .scene import SceneSpec
from .survey import ControlPoint, Photograph, SurveySpec, SurveyTruth, generate

__all__ = ["ControlPoint", "FlightSpec", "Lens", "LensSpec", "Photograph", "Pose", "SceneSpec", "SurveySpec",
           "SurveyTruth", "generate"]
