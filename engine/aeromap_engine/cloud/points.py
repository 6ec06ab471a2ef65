"""The point cloud passed between stages: coordinates in the engine's world frame with colour and view count."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class PointCloud:
    xyz: np.ndarray  # (N, 3) float32 in the world frame (projected CRS minus offset), or float64 in the CRS
    rgb: np.ndarray  # (N, 3) uint8
    views: np.ndarray  # (N,) uint8: how many views agree on each point (1 for sparse points of unknown count)

    def __len__(self) -> int:
        return len(self.xyz)

    def subset(self, keep: np.ndarray) -> "PointCloud":
        return PointCloud(self.xyz[keep], self.rgb[keep], self.views[keep])

    @staticmethod
    def concatenate(parts: list["PointCloud"]) -> "PointCloud":
        if not parts:
            return PointCloud(np.zeros((0, 3), np.float32), np.zeros((0, 3), np.uint8), np.zeros(0, np.uint8))
        return PointCloud(np.concatenate([p.xyz for p in parts]), np.concatenate([p.rgb for p in parts]),
                          np.concatenate([p.views for p in parts]))
