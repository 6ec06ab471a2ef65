"""Image retrieval for pairing images without positions: the signatures on synthetic descriptor sets, the pairs
they add, and on the 18 Brighton Beach photographs (three flight lines, 1000 px copies) with the positions hidden,
mapped once under names that hide the flight order.

Which Brighton Beach images overlap comes from their EXIF GPS: cameras within 40 m of each other share ground
(ratio-test SIFT matches between them number in the tens to hundreds, beyond 40 m they fall to the level of
chance, except some pairs two lines apart).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
import pycolmap
import pytest
from PIL import Image
from test_hard_surveys import TRUE_FIX_M
from test_sfm import DATASET, HEIGHT, SFM, WIDTH, downscale, exif_utm, stats

from aeromap_engine import pipeline
from aeromap_engine.project import Project
from aeromap_engine.sfm.alignment import apply
from aeromap_engine.sfm import pairs as pairs_module
from aeromap_engine.sfm.features import extract_features
from aeromap_engine.sfm.pairs import candidate_pairs, contradicting_pairs, sequence_pairs, uses_retrieval
from aeromap_engine.sfm.retrieval import learn_vocabulary, most_similar, retained, signatures

NAMES = sorted(p.name for p in DATASET.glob("DJI_00*.JPG"))
OVERLAP_M = 40.0
K = 5


def scenes(rng: np.random.Generator, count: int, views: int, features: int = 300) -> list[np.ndarray]:
    """Descriptor sets of `views` views of each of `count` scenes: each view keeps a random 70 % of its scene's
    descriptors, perturbed, as SIFT sees the same ground from another place."""
    sets = []
    for _ in range(count):
        scene = rng.uniform(0, 255, (features, 128))
        for _ in range(views):
            kept = scene[rng.random(features) < 0.7]
            sets.append(np.clip(kept + rng.normal(0, 8, kept.shape), 0, 255).astype(np.uint8))
    return sets


def test_vocabulary_finds_the_clusters() -> None:
    rng = np.random.default_rng(0)
    centres = rng.uniform(20, 235, (4, 128))
    descriptors = np.rint(np.concatenate([c + rng.normal(0, 3, (500, 128)) for c in centres])).astype(np.uint8)
    words = learn_vocabulary([descriptors[:1000], descriptors[1000:]], size=4)
    distances = np.linalg.norm(words[:, None] - centres[None], axis=2)
    assert sorted(distances.argmin(axis=1)) == [0, 1, 2, 3]
    assert distances.min(axis=1).max() < 3.0


def test_views_of_one_scene_are_most_similar() -> None:
    sets = scenes(np.random.default_rng(1), count=5, views=4)
    sig = signatures(sets)
    assert np.allclose(np.linalg.norm(sig, axis=1), 1.0)
    similar = most_similar(sig, np.arange(len(sets)), 3)
    for i, row in enumerate(similar):
        assert i not in row
        assert sorted(row // 4) == [i // 4] * 3  # the other three views of its scene
        scores = sig[row] @ sig[i]
        assert np.all(np.diff(scores) <= 0)  # best first
    assert most_similar(sig[:3], np.arange(3), 10).shape == (3, 2)  # never more than the other images
    assert signatures([np.zeros((0, 128), np.uint8)] * 3).shape[0] == 3  # featureless images still pair


def test_return_lines_pair_without_gps(caplog: pytest.LogCaptureFixture) -> None:
    """100 images in two flight lines flown out and back over the same ground, no positions: image i sees the
    ground that image 99 - i sees. Capture order never links them; retrieval does."""
    rng = np.random.default_rng(2)
    ground = scenes(rng, count=50, views=2)
    sets = [ground[2 * i] for i in range(50)] + [ground[2 * (49 - i) + 1] for i in range(50)]
    unknown = np.full((100, 2), np.nan)
    assert uses_retrieval(unknown, 0, np.zeros(100, bool))
    with caplog.at_level("INFO", logger="aeromap"):
        found = set(candidate_pairs(unknown, list(range(100)), 0, signatures(sets)))
    assert all((i, 99 - i) in found for i in range(50))
    assert all((i, i + 1) in found for i in range(99))  # the capture-order neighbours stay
    assert len(found) < 100 * 10
    assert "Image retrieval found" in caplog.text


def test_only_images_without_position_or_oblique_use_retrieval() -> None:
    rng = np.random.default_rng(3)
    positions = np.array([[c * 20.0, r * 20.0] for r in range(6) for c in range(6)])
    sig = signatures(scenes(rng, count=36, views=1))
    nadir = np.zeros(36, bool)
    assert not uses_retrieval(positions, 0, nadir)
    assert candidate_pairs(positions, list(range(36)), 0, sig) == candidate_pairs(positions, list(range(36)), 0)
    oblique = nadir.copy()
    oblique[7] = True  # a façade shot: its most similar images join its GPS neighbours
    assert uses_retrieval(positions, 0, oblique)
    added = set(candidate_pairs(positions, list(range(36)), 3, sig, oblique)) - set(
        candidate_pairs(positions, list(range(36)), 3))
    assert added and all(7 in pair for pair in added)
    positions[20] = np.nan
    assert uses_retrieval(positions, 0, nadir)
    with_retrieval = set(candidate_pairs(positions, list(range(36)), 3, sig))
    without = set(candidate_pairs(positions, list(range(36)), 3))
    added = with_retrieval - without
    assert len(added) == 3 and all(20 in pair for pair in added)
    assert not uses_retrieval(np.full((60, 2), np.nan), 0, np.zeros(60, bool))  # small sets: every pair


def test_matcher_order_pairs_the_images_near_in_capture_order() -> None:
    positions = np.c_[np.arange(30.0) * 10, np.zeros(30)]  # one line, 10 m apart
    order = [int(i) for i in np.random.default_rng(2).permutation(30)]  # captured in no order along it
    usual = set(candidate_pairs(positions, order, 3))
    wider = set(candidate_pairs(positions, order, 3, order_neighbors=5))
    in_order = sequence_pairs(order, 5)
    assert in_order <= wider and not in_order <= usual
    assert wider - usual <= in_order  # nothing else added
    assert set(candidate_pairs(positions, order, 3, order_neighbors=1)) == usual  # never fewer than 2 each way


def test_pairs_verified_from_too_far_apart_are_contradicted() -> None:
    """A grid 20 m apart whose verified pairs are neighbours, plus a pair 200 m apart matched on repeated
    texture: only that one is rejected, and not when one of its photographs is oblique."""
    positions = {f"{c}{r}": np.array([c * 20.0, r * 20.0, 50.0]) for r in range(5) for c in range(10)}
    pairs = [(f"{c}{r}", f"{c + 1}{r}") for r in range(5) for c in range(9)]
    pairs += [(f"{c}{r}", f"{c}{r + 1}") for r in range(4) for c in range(10)]
    far = ("00", "90")  # 180 m
    everything = set(positions)
    ratios = dict.fromkeys(positions, 1.0)
    assert contradicting_pairs(pairs + [far], positions, everything, ratios) == [far]
    assert contradicting_pairs(pairs + [far], positions, everything - {"90"}, ratios) == []
    assert contradicting_pairs(pairs + [("00", "x")], positions, everything, ratios) == []  # no position: no verdict


def test_pairs_of_a_higher_flight_are_kept_by_their_footprints() -> None:
    """A low flight 40 m up (photographs 15 m apart) and a high one 160 m up (70 m apart, most pairs 15 m: the
    median) over the same field, lens footprint 1.04 m per metre of height: the high flight's neighbours 70
    and 99 m apart and a high photograph paired with the low ones beneath it see the same ground and are kept;
    low photographs 200 m apart, and high ones 700 m apart, cannot and are dropped."""
    low = {f"L{c}-{r}": np.array([c * 15.0, r * 15.0, 40.0]) for r in range(15) for c in range(15)}
    high = {f"H{c}-{r}": np.array([c * 70.0, r * 70.0, 160.0]) for r in range(4) for c in range(4)}
    positions = {**low, **high, "Hfar": np.array([910.0, 0.0, 160.0])}
    pairs = [(a, b) for a in low for b in low if a < b and np.linalg.norm(low[a] - low[b]) < 16]
    normal_high = [(a, b) for a in high for b in high if a < b and np.linalg.norm(high[a] - high[b]) < 100]
    across = [("H1-1", "L4-4"), ("H1-1", "L6-6")]
    far = [("L0-0", "L0-13"), ("H3-0", "Hfar")]
    ratios = dict.fromkeys(positions, 0.5 * np.hypot(4, 3) / (0.6 * 4))
    rejected = contradicting_pairs(pairs + normal_high + across + far, positions, set(positions), ratios)
    assert rejected == far


@pytest.fixture(scope="module")
def brighton_descriptors() -> list[np.ndarray]:
    """The retained descriptors of the 18 photographs at 1000 px, as the opensfm stage keeps them."""
    out = []
    for name in NAMES:
        with Image.open(DATASET / name) as image:
            full = image.size
            image.draft("RGB", (WIDTH, HEIGHT))
            grey = np.asarray(image.convert("L").resize((WIDTH, HEIGHT), Image.LANCZOS))
        out.append(retained(extract_features(grey, full, 10000).descriptors))
    return out


def recall(found: set[tuple[int, int]], truth: set[tuple[int, int]]) -> float:
    return len(found & truth) / len(truth)


@pytest.mark.long
def test_brighton_retrieval_finds_overlapping_pairs(brighton_descriptors: list[np.ndarray]) -> None:
    utm = exif_utm(NAMES)
    xy = np.array([utm[n][:2] for n in NAMES])
    distance = np.linalg.norm(xy[:, None] - xy[None], axis=2)
    n = len(NAMES)
    truth = {(i, j) for i in range(n) for j in range(i + 1, n) if distance[i, j] < OVERLAP_M}
    shuffle = np.random.default_rng(4).permutation(n)  # image i of the shuffled set is photograph shuffle[i]
    sig = signatures([brighton_descriptors[s] for s in shuffle])
    similar = most_similar(sig, np.arange(n), K)
    found = {tuple(sorted((int(shuffle[i]), int(shuffle[j])))) for i in range(n) for j in similar[i]}
    window = max(w for w in range(1, n) if len(sequence_pairs(list(shuffle), w)) <= len(found))
    ordered = sequence_pairs(list(shuffle), window)  # as many pairs as capture order can give at most
    print(f"retrieval {len(found)} pairs, recall {recall(found, truth):.2f}; capture-order window {window}: "
          f"{len(ordered)} pairs, recall {recall(ordered, truth):.2f}; {len(truth)} overlapping pairs")
    assert len(found & truth) / len(found) > 0.7  # most retrieved pairs overlap
    assert recall(found, truth) > 0.5
    assert recall(found, truth) > recall(ordered, truth) + 0.15


@dataclass(frozen=True)
class ShuffledSurvey:
    project: Project
    photograph_of: dict[str, str]  # the photograph each image name stands for
    log_lines: list[str]


@pytest.fixture(scope="module")
def shuffled_without_gps(tmp_path_factory: pytest.TempPathFactory, engine_log) -> ShuffledSurvey:
    """The 18 photographs without GPS under names that hide the flight order, mapped with retrieval from five
    images up (sets of up to 60 are otherwise matched pair by pair)."""
    root = tmp_path_factory.mktemp("shuffled")
    (root / "images").mkdir()
    order = random.Random(3).sample(range(len(NAMES)), len(NAMES))
    photograph_of = {}
    for name, slot in zip(NAMES, order):
        photograph_of[f"IMG_{slot:03d}.JPG"] = name
        downscale(DATASET / name, root / "images" / f"IMG_{slot:03d}.JPG", keep_gps=False)
    project = Project(root)
    with pytest.MonkeyPatch.context() as patch, engine_log() as captured:
        patch.setattr(pairs_module, "EXHAUSTIVE_WITHOUT_GPS", 5)
        pipeline.run(project, SFM)
        return ShuffledSurvey(project, photograph_of, captured.lines)


@pytest.mark.long
def test_brighton_without_gps_registers_every_image(shuffled_without_gps: ShuffledSurvey) -> None:
    lines = shuffled_without_gps.log_lines
    found = next(line for line in lines if line.startswith("Image retrieval found"))
    assert int(found.split("(")[1].split()[0]) > 0  # pairs that capture order did not give
    matched = next(line for line in lines if line.startswith("Matched"))
    assert int(matched.split()[1]) < n_choose_2(len(NAMES))  # not every pair
    reconstruction = stats(shuffled_without_gps.project)["reconstruction"]
    assert reconstruction["images_registered"] == len(NAMES)
    assert reconstruction["georef_source"] == "none"


@pytest.mark.long
def test_no_gps_and_shuffled_capture_order(shuffled_without_gps: ShuffledSurvey) -> None:
    """The model has the survey's shape: a similarity puts the cameras within a metre of their photographs'
    fixes, each within the fixes' own accuracy."""
    model = pycolmap.Reconstruction(shuffled_without_gps.project.root / "opensfm" / "reconstruction")
    solved = {model.image(i).name: model.image(i).projection_center() for i in model.reg_image_ids()}
    assert len(solved) == len(NAMES)
    truth = exif_utm(NAMES)
    source = np.array([solved[n] for n in sorted(solved)])
    target = np.array([truth[shuffled_without_gps.photograph_of[n]] for n in sorted(solved)])
    fit = pycolmap.estimate_sim3d(source, target)
    residuals = np.linalg.norm(apply(fit, source) - target, axis=1)
    assert np.median(residuals) < 1.0 and residuals.max() < TRUE_FIX_M, residuals


def n_choose_2(n: int) -> int:
    return n * (n - 1) // 2
