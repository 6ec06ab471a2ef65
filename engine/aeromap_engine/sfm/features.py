"""SIFT features at the scale the feature quality implies, in the form COLMAP's matcher reads.

OpenCV's SIFT does the work: at the same scale it takes a fraction of the CPU time of COLMAP's CPU SIFT
(bench/NOTES.md), and it releases the interpreter lock, so threads process images in
parallel. Of the keypoints found, the coarsest-scale ones are kept: they repeat best across the viewpoint and
exposure changes between aerial photographs (COLMAP keeps the same ones).

An image that shows fewer features than wanted at the feature quality's scale (a 640 px thermal frame read at
320 px, a low-texture field) is read again at twice the scale, up to its full resolution: small thermal frames
then show enough features, and their overlapping pairs enough verified matches, to be placed.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

# ODM's feature_process_size: fraction of the larger image side per feature quality.
QUALITY_SCALES = {"ultra": 1.0, "high": 0.5, "medium": 0.25, "low": 0.125, "lowest": 0.0675}
MIN_PROCESS_SIZE = 320  # px; below this SIFT finds too little to match
# The largest side a poor image is read at by doubling its scale: the size at which the default feature quality
# already reads a 12 MP camera's photographs, so that the memory that extraction takes stays what it was.
MAX_FINER_SIDE = 2000

# OpenCV's default contrast threshold, then lower ones for images that show fewer features than wanted at it
# (water, fields, snow): each retry is a full detection pass, so there are few.
CONTRAST_THRESHOLDS = (0.04, 0.01, 0.0025)

# Bytes of working memory per pixel of the processed image: OpenCV's SIFT doubles the image and keeps six
# blurred and five difference levels per octave in float32 (bench/NOTES.md).
SIFT_BYTES_PER_PIXEL = 220


@dataclass
class Features:
    keypoints: np.ndarray  # (N, 4) float32: x, y (full-resolution pixels, COLMAP convention), scale, orientation
    descriptors: np.ndarray  # (N, 128) uint8: RootSIFT scaled to bytes, as COLMAP stores SIFT

    def __len__(self) -> int:
        return len(self.keypoints)


def process_size(max_dim: int, quality: str) -> int:
    """The larger side (px) at which features are extracted, as ODM's feature quality defines it."""
    return min(max_dim, max(MIN_PROCESS_SIZE, round(max_dim * QUALITY_SCALES[quality])))


def process_sizes(max_dim: int, quality: str) -> list[int]:
    """The larger sides (px) at which an image's features are extracted, in order, until it shows as many as
    wanted: the feature quality's, then twice that while within the image and MAX_FINER_SIDE."""
    sides = [process_size(max_dim, quality)]
    while sides[-1] < max_dim and min(max_dim, 2 * sides[-1]) <= MAX_FINER_SIDE:
        sides.append(min(max_dim, 2 * sides[-1]))
    return sides


def sift_memory(width: int, height: int, quality: str) -> int:
    """Bytes that extracting the features of one such image takes at its peak (at its finest scale)."""
    scale = process_sizes(max(width, height), quality)[-1] / max(width, height)
    return int(width * scale * height * scale * SIFT_BYTES_PER_PIXEL)


def extract_features(grey: np.ndarray, full_size: tuple[int, int], count: int) -> Features:
    """Up to `count` SIFT features of a greyscale image that shows the full-resolution frame (width, height) at
    a reduced size."""
    keypoints: tuple = ()
    for threshold in CONTRAST_THRESHOLDS:
        sift = cv2.SIFT_create(contrastThreshold=threshold, enable_precise_upscale=True)
        keypoints = sift.detect(grey, None)
        if len(keypoints) >= count:
            break
    keypoints = sorted(keypoints, key=lambda k: k.size, reverse=True)[:count]
    keypoints, descriptors = sift.compute(grey, keypoints)
    if descriptors is None:
        return Features(np.zeros((0, 4), np.float32), np.zeros((0, 128), np.uint8))
    to_full = np.array([full_size[0] / grey.shape[1], full_size[1] / grey.shape[0]])
    frame = np.array([(k.pt[0], k.pt[1], k.size, k.angle) for k in keypoints], dtype=np.float64)
    frame[:, :2] = (frame[:, :2] + 0.5) * to_full  # OpenCV puts the first pixel's centre at 0, COLMAP at 0.5
    frame[:, 2] *= to_full.mean() / 2.0  # OpenCV's size is a diameter
    frame[:, 3] = np.deg2rad(frame[:, 3])
    return Features(frame.astype(np.float32), root_sift_bytes(descriptors))


def root_sift_bytes(descriptors: np.ndarray) -> np.ndarray:
    """RootSIFT (square root of the L1-normalised descriptor), scaled to bytes as COLMAP does for its own SIFT."""
    d = descriptors.astype(np.float32)
    d /= np.maximum(d.sum(axis=1, keepdims=True), 1e-12)
    return np.minimum(np.round(np.sqrt(d) * 512.0), 255.0).astype(np.uint8)
