"""Rolling-shutter correction of the tie points.

A rolling shutter reads the sensor row by row: a drone flying at 10 m/s with a 30 ms readout has moved 30 cm
between the first and the last row, so each photograph is sheared and stretched along the flight, by several
pixels at survey resolutions. The correction here is that of the tie points: every observation is moved to where
a global shutter at the photograph's nominal centre would have seen its point, given where the camera was when
the observation's row was read (the centre moved along the camera's velocity, which the neighbouring photographs
in capture order give); a bundle adjustment then settles the cameras and points on the corrected observations.
The rows are taken to be read top to bottom of the stored image, mid-readout at the capture time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pycolmap

MAX_GAP_S = 10.0  # neighbours further apart in time belong to another line or flight: no velocity from them


@dataclass(frozen=True)
class Shot:
    name: str
    time_s: float
    centre: np.ndarray  # world frame, metres


def velocities(shots: list[Shot]) -> dict[str, np.ndarray]:
    """Each shot's velocity (m/s) from its neighbours in time: the central difference where both are close in
    time, else the one-sided difference, else none (a shot alone in its stretch of time)."""
    ordered = sorted(shots, key=lambda s: s.time_s)
    out = {}
    for i, shot in enumerate(ordered):
        before = ordered[i - 1] if i > 0 and shot.time_s - ordered[i - 1].time_s <= MAX_GAP_S else None
        after = ordered[i + 1] if i + 1 < len(ordered) and ordered[i + 1].time_s - shot.time_s <= MAX_GAP_S else None
        first, last = before or shot, after or shot
        if first is last or last.time_s <= first.time_s:
            continue
        out[shot.name] = (last.centre - first.centre) / (last.time_s - first.time_s)
    return out


def row_offsets_s(rows: np.ndarray, height: int, readout_s: float) -> np.ndarray:
    """When each row was read relative to the capture time (the middle row)."""
    return (rows / height - 0.5) * readout_s


def correct_image(model: pycolmap.Reconstruction, image: pycolmap.Image, velocity: np.ndarray,
                  readout_s: float) -> float:
    """Move the image's observations to where a global shutter at the nominal centre would see their points;
    returns the largest move in pixels."""
    camera = model.cameras[image.camera_id]
    pose = image.cam_from_world()
    rotation, translation = pose.rotation.matrix(), pose.translation
    observed = [p for p in image.points2D if p.has_point3D()]
    if not observed:
        return 0.0
    xy = np.array([p.xy for p in observed])
    xyz = np.array([model.point3D(p.point3D_id).xyz for p in observed])
    shift = np.outer(row_offsets_s(xy[:, 1], camera.height, readout_s), velocity)
    # The camera stood at C + shift when the row was read: as if the point stood at X - shift.
    seen = camera.img_from_cam((xyz - shift) @ rotation.T + translation, check_cheirality=False)
    nominal = camera.img_from_cam(xyz @ rotation.T + translation, check_cheirality=False)
    moves = nominal - seen
    for point2D, move in zip(observed, moves):
        point2D.xy = point2D.xy + move
    return float(np.linalg.norm(moves, axis=1).max())
