"""Seamlines and blending of the orthophoto (ortho/seams.py, ortho/mosaic.py) on made-up views with known
content: a seam that bends around what two views disagree on, the tile's rim kept on the nearest-nadir views,
bands that add up to the picture, and a blend that takes an exposure step out of a seam but keeps the detail."""

from __future__ import annotations

import numpy as np

from aeromap_engine.ortho.mosaic import BlendSettings, Mosaic
from aeromap_engine.ortho.seams import FORBIDDEN, SeamSettings, _Field, place_seams

SIZE = 64


def two_views(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, tuple[slice, slice]]:
    """Costs that put the nadir seam halfway across, two views of the same ground (colours in [0, 1]), and a
    car parked on the seam that only the second view saw."""
    cols = np.arange(SIZE, dtype=np.float32)
    costs = np.stack([np.broadcast_to(0.02 * cols, (SIZE, SIZE)),
                      np.broadcast_to(0.02 * (SIZE - 1 - cols), (SIZE, SIZE))]).astype(np.float32)
    ground = rng.uniform(0.3, 0.5, (SIZE, SIZE, 3)).astype(np.float32)
    colours = np.stack([ground, ground.copy()])
    car = (slice(20, 36), slice(24, 40))
    colours[1][car] = (0.9, 0.1, 0.1)
    return costs, colours, car


def test_the_seam_goes_around_what_the_views_disagree_on_and_stays_at_nadir_elsewhere() -> None:
    costs, colours, car = two_views(np.random.default_rng(1))
    rim = np.zeros((SIZE, SIZE), bool)
    labels = place_seams(costs, colours, rim, SeamSettings())
    nadir = np.argmin(costs, axis=0)
    # The nadir rule cuts the car in two; the placed seam leaves it whole, from one view.
    assert len(np.unique(nadir[car])) == 2
    assert len(np.unique(labels[car])) == 1
    field = _Field.of(costs, colours, SeamSettings().seam_cost)
    assert field.energy(labels.ravel()) < field.energy(nadir.ravel())
    # Away from the car the seam is the nadir seam.
    assert np.array_equal(labels[50:], nadir[50:]) and np.array_equal(labels[:5], nadir[:5])


def test_the_rim_keeps_the_nadir_views_and_no_view_colours_a_cell_outside_its_frame() -> None:
    costs, colours, car = two_views(np.random.default_rng(2))
    rim = np.zeros((SIZE, SIZE), bool)
    rim[car[0], :] = True  # rows through the car: the seam may not bend there
    costs[0, 40:, 40:] = FORBIDDEN  # the first view's frame ends there
    labels = place_seams(costs, colours, rim, SeamSettings())
    nadir = np.argmin(costs, axis=0)
    assert np.array_equal(labels[rim], nadir[rim])
    assert (labels[40:, 40:] == 1).all()


def test_the_bands_add_up_to_the_view() -> None:
    rng = np.random.default_rng(3)
    colour = rng.uniform(0, 255, (SIZE, SIZE, 3)).astype(np.float32)
    mosaic = Mosaic((SIZE, SIZE))
    mosaic.add(colour, np.ones((SIZE, SIZE), bool), np.zeros((SIZE, SIZE), np.int32), 0)
    rgb, covered = mosaic.result()
    assert covered.all()
    assert np.abs(rgb.astype(np.float32) - colour).max() <= 1.0


def test_an_exposure_step_fades_across_the_seam_and_the_detail_stays() -> None:
    size = 256
    rng = np.random.default_rng(4)
    detail = rng.normal(0, 12, (size, size, 1)).astype(np.float32)
    ground = np.clip(120 + detail, 0, 255).repeat(3, axis=2)
    labels = np.where(np.arange(size) < size // 2, 0, 1)[None].repeat(size, axis=0)
    mosaic = Mosaic((size, size), BlendSettings())
    everywhere = np.ones((size, size), bool)
    mosaic.add(ground, everywhere, labels, 0)
    mosaic.add(ground * 1.3, everywhere, labels, 1)  # the second photograph a third brighter
    rgb = mosaic.result()[0].astype(np.float32).mean(axis=2)
    # The brightness each column got, against the ground's: 1 on the left, 1.3 on the right. A hard cut would
    # jump by 0.3 between two columns; blended, no two neighbouring columns differ by a tenth of that.
    gain = rgb.mean(axis=0) / ground[..., 0].mean(axis=0)
    assert abs(gain[:16].mean() - 1) < 0.01 and abs(gain[-16:].mean() - 1.3) < 0.01
    assert np.abs(np.diff(gain)).max() < 0.03
    # At the seam the detail is the photographs' own, at full strength: not averaged away, not doubled.
    residual, texture = rgb - rgb.mean(axis=0), detail[..., 0] - detail[..., 0].mean(axis=0)
    for col in range(size // 2 - 4, size // 2 + 4):
        strength = residual[:, col] @ texture[:, col] / (texture[:, col] @ texture[:, col])
        assert 0.97 < strength < 1.33
        assert np.corrcoef(residual[:, col], texture[:, col])[0, 1] > 0.98
