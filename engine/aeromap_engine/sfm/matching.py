"""Matching a survey's photographs in a scratch database (database.py): their features and position priors,
the candidate pairs (pairs.py), the verified matches, the weak pairs matched again with a looser ratio test, the
pairs whose GPS positions rule out an overlap forgotten, and how strongly that ties the photographs (ties.py)."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..io.images import load_levels
from ..log import log, timed
from ..photo import Photo, capture_order
from .cameras import CameraKind, refinement
from .database import (PositionPrior, keypoint_counts, match_pairs, open_database, reject_pairs, rematch_weak_pairs,
                       verified_match_counts, verified_pairs)
from .mapping import MappingSettings
from .pairs import candidate_pairs, contradicting_pairs, uses_retrieval
from .pixels import extract_all
from .retrieval import retained, signatures
from .survey import Survey
from .ties import Ties, footprint_short_sides, measure_ties, neighbour_overlap

if TYPE_CHECKING:
    from ..pipeline import StageContext

MIN_PAIR_INLIERS = 15  # verified matches for a pair to count as overlapping (COLMAP's default)
# Pairs with fewer verified matches than a pair needs to start a model (COLMAP's init_min_num_inliers) are matched
# again with a looser ratio test (sfm/database.py rematch_weak_pairs).
WEAK_PAIR_INLIERS = 100
OBLIQUE_PITCH = 30.0  # degrees from straight down beyond which a photograph counts as oblique


@dataclass(frozen=True)
class Matching:
    """A scratch matching database of the whole survey, and how to map from it."""
    database: Path
    scratch: Path
    camera_kinds: dict[int, CameraKind]  # COLMAP camera id -> kind
    settings: MappingSettings
    ties: Ties  # how strongly the photographs are tied before mapping


@contextlib.contextmanager
def matched(ctx: "StageContext", survey: Survey, timings: dict[str, float]) -> Iterator[Matching]:
    """Features and verified matches of every photograph in a scratch database, removed afterwards."""
    project, options = ctx.project, ctx.options
    threads = options.max_concurrency
    photos, positions = survey.photos, survey.positions
    mapping_priors = survey.priors if survey.frame.source == "gps" else {}  # control points replace the GPS
    if survey.frame.source == "gcp" and options.force_gps and survey.priors:
        log.info("Mapping with the GPS positions as priors beside the ground control points (force-gps)")
        mapping_priors = survey.priors
    project.path("opensfm").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".sfm-", dir=project.path("opensfm")) as scratch:
        database = Path(scratch) / "database.db"
        oblique = np.array([p.pitch is not None and p.pitch > OBLIQUE_PITCH for p in photos])
        retrieval = uses_retrieval(positions[:, :2], options.matcher_neighbors, oblique)
        with timed("features", timings):
            camera_kinds, kept = build_database(ctx, database, photos, survey.kinds, mapping_priors, retrieval)
        with timed("matching", timings):
            pairs = candidate_pairs(positions[:, :2], capture_order(photos), options.matcher_neighbors,
                                    signatures(kept) if retrieval else None, oblique, options.matcher_order)
            del kept  # up to 128 kB an image, of no use once paired
            named = [(photos[i].filename, photos[j].filename) for i, j in pairs]
            match_pairs(database, named, Path(scratch) / "pairs.txt", threads, lambda f: ctx.progress(0.3 + 0.25 * f))
            calibrated = {p.filename for p, kind in zip(photos, survey.kinds) if kind.focal_known}
            located = {p.filename for p, xy in zip(photos, positions[:, :2]) if np.isfinite(xy).all()}
            gained = rematch_weak_pairs(database, [(a, b) for a, b in named if a in calibrated and b in calibrated],
                                        WEAK_PAIR_INLIERS, Path(scratch) / "pairs.txt", threads,
                                        lambda f: ctx.progress(0.55 + 0.1 * f), located)
            reject_far_pairs(database, photos, positions, oblique)
            ties = measure_ties(keypoint_counts(database), verified_match_counts(database), len(pairs),
                                MIN_PAIR_INLIERS, neighbour_overlap(positions[:, :2], footprint_short_sides(photos)))
            log.info("Matched %d candidate pairs; %d overlap%s. Ties: %s", len(pairs), ties.overlapping_pairs,
                     f" ({gained} weak pairs strengthened by a looser ratio test)" if gained else "",
                     ties.describe())
            project.update_stats("ties", ties.as_dict())  # there, too, when no model can be made
        settings = MappingSettings(options.sfm_algorithm, threads,
                                   refinement(survey.kinds, options.use_fixed_camera_params,
                                              options.focal_refinement == "free"),
                                   use_position_priors=bool(mapping_priors))
        yield Matching(database, Path(scratch), camera_kinds, settings, ties)


def build_database(ctx: "StageContext", path: Path, photos: list[Photo], kinds: list[CameraKind],
                   priors: dict[str, PositionPrior], retrieval: bool
                   ) -> tuple[dict[int, CameraKind], list[np.ndarray]]:
    """The matching database with every photograph's features and prior; returns the kind of each camera id, and
    when retrieval is wanted the descriptors it needs of each photograph (none otherwise)."""
    distinct = list(dict.fromkeys(kinds))
    log.info("Cameras: %s", "; ".join(f"{k.make} {k.model} {k.width}x{k.height} ({k.projection}, "
                                      f"{k.colmap_model})" for k in distinct))
    options = ctx.options
    with open_database(path, [k.initial_camera() for k in distinct]) as database:
        extracted = extract_all(ctx.project.images_dir, load_levels(ctx.project.radiometry_file), photos,
                                options.feature_quality, options.min_num_features,
                                options.max_concurrency, lambda f: ctx.progress(0.3 * f))
        kept: list[np.ndarray] = []
        for i, features in enumerate(extracted):
            database.add(photos[i].filename, distinct.index(kinds[i]), features, priors.get(photos[i].filename))
            if retrieval:
                kept.append(retained(features.descriptors))
        return dict(zip(database.camera_ids, distinct)), kept


def reject_far_pairs(database: Path, photos: list[Photo], positions: np.ndarray, oblique: np.ndarray) -> None:
    """Forget verified pairs that the GPS says cannot overlap (sfm/pairs.py contradicting_pairs)."""
    located = {p.filename: xyz for p, xyz in zip(photos, positions) if np.isfinite(xyz).all()}
    nadir = {p.filename for p, tilted in zip(photos, oblique) if not tilted}
    far = contradicting_pairs(verified_pairs(database, MIN_PAIR_INLIERS), located, nadir,
                              {p.filename: p.footprint_ratio for p in photos})
    if far:
        log.info("Rejected %d matched pairs whose GPS positions lie too far apart for their views to overlap: %s",
                 len(far), ", ".join(f"{a}-{b}" for a, b in far))
        reject_pairs(database, far)
