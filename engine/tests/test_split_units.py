"""Split planning and submodel alignment, on made-up positions and on COLMAP's synthetic reconstructions."""

from __future__ import annotations

import numpy as np
import pycolmap
import pytest

from aeromap_engine.errors import InputError
from aeromap_engine.sfm.blocks import plan_blocks
from aeromap_engine.sfm.groups import joined
from aeromap_engine.split.align import align_submodels, camera_centres, registered_names
from aeromap_engine.split.plan import plan_submodels, submodel_count


def deregister(model: pycolmap.Reconstruction, names: list[str]) -> None:
    """Take images out of the model; COLMAP drops their observations, and points left with one view."""
    for name in names:
        image = model.find_image_with_name(name)
        if image is not None and image.has_pose:
            model.deregister_frame(image.frame_id)


def grid_positions(columns: int, rows: int, spacing: float) -> tuple[list[str], np.ndarray]:
    xy = np.array([(c * spacing, r * spacing) for r in range(rows) for c in range(columns)], float)
    return [f"IMG_{i:04d}.JPG" for i in range(len(xy))], xy


def test_no_split_up_to_the_threshold() -> None:
    assert submodel_count(80, 80) == 1
    assert submodel_count(81, 80) == 2
    assert submodel_count(153, 50) == 4


def test_every_image_owned_once_and_overlap_within_the_radius() -> None:
    names, xy = grid_positions(20, 8, 20.0)  # a 380 m by 140 m block, 160 images
    plan = plan_submodels(names, xy, 80, 45.0)
    assert len(plan) == 2
    owned = [n for sub in plan for n in sub.core]
    assert sorted(owned) == sorted(names)
    position = dict(zip(names, xy))
    for sub in plan:
        core = np.array([position[n] for n in sub.core])
        assert 50 <= len(sub.core) <= 110
        assert set(sub.core) <= set(sub.images)
        for name in set(sub.images) - set(sub.core):
            assert np.linalg.norm(core - position[name], axis=1).min() < 45.0
        outside = [n for n in names if n not in sub.images]
        assert all(np.linalg.norm(core - position[n], axis=1).min() >= 45.0 for n in outside)
    # The blocks are cut across the long side, and the overlap reaches two image spacings into each neighbour.
    assert len(set(plan[0].images) & set(plan[1].images)) == 2 * 2 * 8
    again = plan_submodels(names, xy, 80, 45.0)
    assert again == plan


def synthetic_model() -> pycolmap.Reconstruction:
    options = pycolmap.SyntheticDatasetOptions()
    options.num_rigs, options.num_cameras_per_rig, options.num_frames_per_rig = 1, 1, 12
    options.num_points3D = 300
    return pycolmap.synthesize_dataset(options)


def moved(model: pycolmap.Reconstruction) -> pycolmap.Reconstruction:
    copy = pycolmap.Reconstruction(model)
    rotation = pycolmap.Rotation3d(np.array([0.1, -0.2, 0.3]))
    copy.transform(pycolmap.Sim3d(1.7, rotation, np.array([12.0, -4.0, 3.0])))
    return copy


def test_submodels_sharing_views_are_joined_onto_the_reference() -> None:
    truth = synthetic_model()
    names = sorted(registered_names(truth))
    reference, other = pycolmap.Reconstruction(truth), moved(truth)
    deregister(reference, names[8:])  # the reference keeps images 0-7, the other 4-11: four shared
    deregister(other, names[:4])
    joins = align_submodels([reference, other], ["submodel_0000", "submodel_0001"])
    assert [(j.source, j.target, j.shared) for j in joins] == [(1, 0, 4)]
    assert joins[0].residual_m < 1e-6
    # Images only the moved model holds are back where the truth has them.
    assert np.allclose(camera_centres(other, names[8:]), camera_centres(truth, names[8:]), atol=1e-6)


def test_submodels_without_shared_views_are_refused() -> None:
    truth = synthetic_model()
    names = sorted(registered_names(truth))
    reference, other = pycolmap.Reconstruction(truth), moved(truth)
    deregister(reference, names[6:])
    deregister(other, names[:6])  # shares nothing with the reference
    with pytest.raises(InputError, match="submodel_0001 shares fewer than 3 registered photographs"):
        align_submodels([reference, other], ["submodel_0000", "submodel_0001"])


def test_joined_blocks_share_their_points_across_the_border() -> None:
    """Two overlapping halves of one model: joined, every image is back, and each point the halves both saw is one
    point again, seen from both sides of the border (not two points, one per half, that an adjustment would move
    apart)."""
    truth = synthetic_model()
    names = sorted(registered_names(truth))
    first, second = pycolmap.Reconstruction(truth), pycolmap.Reconstruction(truth)
    deregister(first, names[8:])
    deregister(second, names[:4])
    model = joined([first, second])
    assert registered_names(model) == set(names)
    assert np.allclose(camera_centres(model, names), camera_centres(truth, names), atol=1e-9)
    assert model.num_points3D() == first.num_points3D()
    ends = {model.find_image_with_name(names[0]).image_id, model.find_image_with_name(names[-1]).image_id}
    spanning = [p for p in model.points3D.values() if ends <= {e.image_id for e in p.track.elements}]
    assert len(spanning) > 0.5 * model.num_points3D()
    assert model.compute_num_observations() == truth.compute_num_observations()


def test_blocks_only_where_one_mapping_would_not_hold_the_survey() -> None:
    names, xy = grid_positions(20, 10, 20.0)  # 200 images
    assert plan_blocks(names, xy, 200 * 12_000_000) == []
    plan = plan_blocks(names, xy, 120 * 12_000_000)  # cores of 80: three blocks
    assert [b.name for b in plan] == ["block_0000", "block_0001", "block_0002"]
    assert sorted(n for b in plan for n in b.core) == sorted(names)
    assert all(len(b.images) <= 130 for b in plan)
    for a, b in zip(plan, plan[1:]):
        assert len(set(a.images) & set(b.images)) >= 20  # two flight lines' views to join them on
