"""Which photographs look alike, for pairing images whose positions are unknown, from the SIFT features already
extracted.

Each image becomes a VLAD signature: a small vocabulary of visual words is learned by k-means on a sample of the
dataset's own descriptors, and each word sums the residuals (descriptor minus word) of the descriptors nearest to
it. Unlike counting words (a bag of words), the residuals still tell images apart when the vocabulary is small
and every word occurs in every image, as on a survey of one kind of ground. The sums are square-rooted (a
repeated texture would otherwise outweigh everything else) and normalised per word and as a whole, so that the
cosine similarity of two images is the dot product of their signatures.
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

# Descriptors kept per image. Features come coarsest scale first, and those repeat best across viewpoints: a
# thousand per image tell overlapping views apart as well as all of them (measured on Brighton Beach) and keep
# memory at 128 kB an image.
RETAINED_FEATURES = 1000
VOCABULARY_SIZE = 64  # words; a signature has VOCABULARY_SIZE x 128 values (32 kB)
VOCABULARY_SAMPLE = 30_000  # descriptors k-means learns from: its time grows with sample x vocabulary
KMEANS_ITERATIONS = 15
QUERY_BLOCK = 1024  # images whose similarities to all others are held at once


def retained(descriptors: np.ndarray) -> np.ndarray:
    """The part of an image's descriptors that retrieval needs (they arrive sorted coarsest first)."""
    return np.ascontiguousarray(descriptors[:RETAINED_FEATURES])


def learn_vocabulary(descriptor_sets: Sequence[np.ndarray], size: int = VOCABULARY_SIZE,
                     sample: int = VOCABULARY_SAMPLE, seed: int = 0) -> np.ndarray:
    """(K, D) float32 visual words: k-means centres of an even sample of every image's descriptors."""
    rng = np.random.default_rng(seed)
    per_image = max(1, -(-sample // max(1, len(descriptor_sets))))
    pool = np.concatenate([d[rng.choice(len(d), min(per_image, len(d)), replace=False)]
                           for d in descriptor_sets if len(d)]).astype(np.float32)
    size = min(size, len(pool))
    cv2.setRNGSeed(seed)
    criteria = (cv2.TERM_CRITERIA_EPS + cv2.TERM_CRITERIA_MAX_ITER, KMEANS_ITERATIONS, 1e-3)
    _, _, words = cv2.kmeans(pool, size, None, criteria, 1, cv2.KMEANS_PP_CENTERS)
    return words


def nearest_words(words: np.ndarray, descriptors: np.ndarray) -> np.ndarray:
    """(N,) index of the word nearest to each descriptor."""
    # The nearest word minimises |w|^2 - 2 d.w; |d|^2 is the same for every word.
    return np.argmin((words * words).sum(axis=1) - 2.0 * descriptors @ words.T, axis=1)


def vlad(words: np.ndarray, descriptors: np.ndarray) -> np.ndarray:
    """(K x D,) unit-length signature of one image's descriptors."""
    d = descriptors.astype(np.float32)
    residuals = np.zeros_like(words)
    if len(d):
        nearest = nearest_words(words, d)
        np.add.at(residuals, nearest, d - words[nearest])
    residuals = np.sign(residuals) * np.sqrt(np.abs(residuals))
    residuals /= np.maximum(np.linalg.norm(residuals, axis=1, keepdims=True), 1e-12)
    flat = residuals.ravel()
    return flat / max(float(np.linalg.norm(flat)), 1e-12)


def signatures(descriptor_sets: Sequence[np.ndarray]) -> np.ndarray:
    """(N, K x D) image signatures whose dot products are the images' similarities."""
    if not any(len(d) for d in descriptor_sets):  # nothing to learn words from; every image alike
        return np.zeros((len(descriptor_sets), 1), np.float32)
    words = learn_vocabulary(descriptor_sets)
    return np.stack([vlad(words, d) for d in descriptor_sets])


def most_similar(signatures: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    """(Q, k) the k images most similar to each queried image, best first, itself excluded."""
    k = min(k, len(signatures) - 1)
    blocks = []
    for start in range(0, len(queries), QUERY_BLOCK):
        block = queries[start:start + QUERY_BLOCK]
        similarity = signatures[block] @ signatures.T
        similarity[np.arange(len(block)), block] = -np.inf
        top = np.argpartition(-similarity, k - 1, axis=1)[:, :k]
        order = np.argsort(-np.take_along_axis(similarity, top, axis=1), axis=1)
        blocks.append(np.take_along_axis(top, order, axis=1))
    return np.concatenate(blocks) if blocks else np.zeros((0, k), np.int64)
