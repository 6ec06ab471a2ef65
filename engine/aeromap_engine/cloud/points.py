"""The point cloud passed between stages: coordinates in the engine's world frame with colour and view count, the
points' classes once they are classified, and the intensities of a laser's cloud imported from elsewhere."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class PointCloud:
    xyz: np.ndarray  # (N, 3) float32 in the world frame (projected CRS minus offset), or float64 in the CRS
    rgb: np.ndarray  # (N, 3) uint8
    views: np.ndarray  # (N,) uint8: how many views agree on each point (1 for sparse points of unknown count)
    classes: np.ndarray | None = None  # (N,) uint8 ASPRS classes (cloud/classes.py), or None: not classified
    intensity: np.ndarray | None = None  # (N,) uint16 LAS intensities, or None: none recorded

    def __len__(self) -> int:
        return len(self.xyz)

    def subset(self, keep: np.ndarray) -> "PointCloud":
        return PointCloud(self.xyz[keep], self.rgb[keep], self.views[keep],
                          None if self.classes is None else self.classes[keep],
                          None if self.intensity is None else self.intensity[keep])

    @staticmethod
    def concatenate(parts: list["PointCloud"]) -> "PointCloud":
        if not parts:
            return PointCloud(np.zeros((0, 3), np.float32), np.zeros((0, 3), np.uint8), np.zeros(0, np.uint8))
        classified = all(p.classes is not None for p in parts)
        measured = all(p.intensity is not None for p in parts)
        return PointCloud(np.concatenate([p.xyz for p in parts]), np.concatenate([p.rgb for p in parts]),
                          np.concatenate([p.views for p in parts]),
                          np.concatenate([p.classes for p in parts]) if classified else None,
                          np.concatenate([p.intensity for p in parts]) if measured else None)
