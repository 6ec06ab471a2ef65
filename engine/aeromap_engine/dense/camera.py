"""Working cameras: distortion-free pinhole versions of the calibrated cameras at a chosen image scale.

Pixel coordinates here follow OpenCV (the centre of the first pixel is 0, 0); COLMAP cameras put it at
0.5, 0.5, which the conversions below account for.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pycolmap

# Working-image size per point cloud quality, as a fraction of the full image's larger side, and the least
# larger side (px). One level finer than ODM's depth maps: semi-global matching keeps one depth per pixel where
# OpenMVS's patch match refines surfaces at sub-pixel level, so the finer grid brings the cloud to the same
# density and detail (medium: a 4000 px image is matched at 1000 px, about the 5 cm of the default products).
QUALITY_SCALES = {"ultra": 1.0, "high": 0.5, "medium": 0.25, "low": 0.125, "lowest": 0.0625}
QUALITY_MIN_SIDE = {"ultra": 640, "high": 640, "medium": 640, "low": 320, "lowest": 320}


def working_scale(width: int, height: int, quality: str) -> float:
    side = max(width, height)
    target = max(side * QUALITY_SCALES[quality], QUALITY_MIN_SIDE[quality])
    return min(1.0, target / side)


@dataclass(frozen=True)
class Pinhole:
    K: np.ndarray  # 3x3, camera-normalised coordinates -> pixel
    width: int
    height: int

    @property
    def focal(self) -> float:
        return float((self.K[0, 0] + self.K[1, 1]) / 2)

    def pixel_rays(self) -> np.ndarray:
        """(H, W, 3) camera-frame rays with z = 1 through every pixel centre."""
        u, v = np.meshgrid(np.arange(self.width, dtype=np.float64), np.arange(self.height, dtype=np.float64))
        x = (u - self.K[0, 2]) / self.K[0, 0]
        y = (v - self.K[1, 2]) / self.K[1, 1]
        return np.dstack([x, y, np.ones_like(x)])


def working_pinhole(camera: pycolmap.Camera, scale: float) -> Pinhole:
    K = np.array(camera.calibration_matrix(), dtype=np.float64)
    K[:2] *= scale
    K[:2, 2] -= 0.5
    return Pinhole(K, max(1, round(camera.width * scale)), max(1, round(camera.height * scale)))


def undistortion_maps(camera: pycolmap.Camera, pinhole: Pinhole, decoded_size: tuple[int, int]
                      ) -> tuple[np.ndarray, np.ndarray]:
    """cv2.remap maps that resample an image decoded at `decoded_size` (w, h) into the pinhole's grid."""
    rays = pinhole.pixel_rays().reshape(-1, 3)
    distorted = camera.img_from_cam(rays)  # COLMAP pixel coordinates at full resolution
    sx, sy = decoded_size[0] / camera.width, decoded_size[1] / camera.height
    map_x = (distorted[:, 0] * sx - 0.5).astype(np.float32).reshape(pinhole.height, pinhole.width)
    map_y = (distorted[:, 1] * sy - 0.5).astype(np.float32).reshape(pinhole.height, pinhole.width)
    return map_x, map_y
