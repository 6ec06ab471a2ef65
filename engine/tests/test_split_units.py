"""Split planning and submodel alignment, on made-up positions and on COLMAP's synthetic reconstructions."""

from __future__ import annotations

import numpy as np
import pycolmap
import pytest

from aeromap_engine import quality
from aeromap_engine.errors import InputError
from aeromap_engine.sfm.blocks import MAPPING_BYTES_PER_KEYPOINT, block_images, plan_blocks
from aeromap_engine.sfm.groups import joined
from aeromap_engine.split.align import align_submodels, camera_centres, join_refusal, registered_names
from aeromap_engine.project import Project
from aeromap_engine.split.runner import NodeSlot, Placement
from aeromap_engine.split.plan import most_core, plan_groups, plan_submodels, read_groups, submodel_count, within_cap
from aeromap_engine.stages.split import failing_first, image_groups


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
    with pytest.raises(InputError, match="no trustworthy join is left for submodel_0001: submodel_0001 to "
                                         "submodel_0000, they share 0 registered photographs, fewer than 3"):
        align_submodels([reference, other], ["submodel_0000", "submodel_0001"])


def along_a_line(model: pycolmap.Reconstruction) -> pycolmap.Reconstruction:
    """The model with its cameras moved, as they look, onto one line 1 m apart, straying a few centimetres from it
    (a single flight line: exactly on it, no similarity could be fitted at all)."""
    stray = np.random.default_rng(2).normal(0.0, 0.03, (len(model.frames), 2))
    for step, frame_id in enumerate(sorted(model.frames)):
        frame = model.frame(frame_id)
        rotation = frame.rig_from_world.rotation
        centre = np.array([step, stray[step, 0], -10.0 + stray[step, 1]])
        frame.rig_from_world = pycolmap.Rigid3d(rotation, -(rotation.matrix() @ centre))
    return model


def test_a_join_on_cameras_along_one_line_is_refused() -> None:
    """Four shared cameras along one line leave the roll about it to chance: the join is refused, naming the
    cause, and the model that would have been moved stays where it was."""
    truth = along_a_line(synthetic_model())
    names = sorted(registered_names(truth))
    reference, other = pycolmap.Reconstruction(truth), moved(truth)
    deregister(reference, names[8:])
    deregister(other, names[:4])
    before = camera_centres(other, names[4:])
    with pytest.raises(InputError, match="the 4 photographs they share lie along one line"):
        align_submodels([reference, other], ["block_0000", "block_0001"])
    assert np.array_equal(camera_centres(other, names[4:]), before)


def test_join_refusals_on_made_up_cameras() -> None:
    """A join is trusted on cameras spread over a plane that agree after it to a tenth of their spacing; not on
    cameras along a line (a little jitter across it does not make a plane), nor on cameras that stay apart."""
    grid = np.array([(x, y, 40.0) for x in (0.0, 10.0, 20.0) for y in (0.0, 7.0, 14.0, 21.0)])
    jitter = np.random.default_rng(1).normal(0.0, 0.02, grid.shape)
    assert join_refusal(grid + jitter, grid) is None  # 2 cm against a bound of 0.7 m (7 m spacing)
    line = np.array([(x, 0.0, 40.0) for x in np.arange(0.0, 60.0, 6.0)]) + jitter[:10] * 10  # 20 cm across
    assert "along one line" in join_refusal(line, line)
    refusal = join_refusal(grid + [0.0, 0.0, 1.0], grid)
    assert refusal is not None and "1 m apart after the join (RMS), more than 0.7 m" in refusal


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
    keypoints = dict.fromkeys(names, 10_000)  # 12 MB of mapping an image
    assert plan_blocks(names, xy, keypoints, 200 * 12_000_000) == []
    plan = plan_blocks(names, xy, keypoints, 150 * 12_000_000)  # cores of about 80, 100 at most: three blocks
    assert [b.name for b in plan] == ["block_0000", "block_0001", "block_0002"]
    assert sorted(n for b in plan for n in b.core) == sorted(names)
    assert all(len(b.core) <= 100 and len(b.images) <= 150 for b in plan)
    for a, b in zip(plan, plan[1:]):
        assert len(set(a.images) & set(b.images)) >= 20  # two flight lines' views to join them on


def test_what_a_mapping_holds_follows_the_keypoints() -> None:
    """Photographs with a quarter of the keypoints (smaller, or a lower feature quality or budget) fit four times as
    many in one mapping: the survey that needs blocks at 10,000 keypoints an image is mapped at once at 2,500."""
    assert block_images(2_000_000_000, MAPPING_BYTES_PER_KEYPOINT * 10_000) == 166
    assert block_images(2_000_000_000, MAPPING_BYTES_PER_KEYPOINT * 2_500) == 666
    names, xy = grid_positions(20, 10, 20.0)
    memory = 150 * MAPPING_BYTES_PER_KEYPOINT * 10_000
    assert len(plan_blocks(names, xy, dict.fromkeys(names, 10_000), memory)) == 3
    assert plan_blocks(names, xy, dict.fromkeys(names, 2_500), memory) == []
    # Half the images rich in keypoints, half poor: their sum decides, not the richest.
    mixed = {n: 10_000 if i % 2 else 2_000 for i, n in enumerate(names)}
    assert plan_blocks(names, xy, mixed, 200 * MAPPING_BYTES_PER_KEYPOINT * 6_000) == []
    assert len(plan_blocks(names, xy, mixed, 150 * MAPPING_BYTES_PER_KEYPOINT * 6_000)) == 3


def uneven_survey() -> tuple[list[str], np.ndarray]:
    """A sparse 12 x 12 grid 20 m apart with a dense 16 x 16 patch 2 m apart in one corner: 400 images, most of
    them in a 30 m square."""
    sparse = [(x * 20.0, y * 20.0) for x in range(12) for y in range(12)]
    dense = [(150.0 + x * 2.0, 150.0 + y * 2.0) for x in range(16) for y in range(16)]
    xy = np.array(sparse + dense)
    return [f"IMG_{i:04d}.JPG" for i in range(len(xy))], xy


def test_no_submodel_owns_far_more_than_the_target() -> None:
    """On a survey of uneven density k-means makes clusters of very different counts; those above the cap are
    bisected along their long axis until none is, every image still owned once."""
    names, xy = uneven_survey()
    plan = plan_submodels(names, xy, 50, 10.0)
    assert max(len(sub.core) for sub in plan) <= most_core(50) == 62
    assert sorted(n for sub in plan for n in sub.core) == sorted(names)


def test_bisection_cuts_across_the_long_axis() -> None:
    """A 40 x 4 strip of 160 images capped at 50: cut across its length into four runs of 40, each as compact as
    the strip allows; a cluster within the cap is left as it is."""
    _, xy = grid_positions(40, 4, 10.0)
    parts = within_cap([np.arange(len(xy))], xy, 50)
    assert sorted(len(p) for p in parts) == [40, 40, 40, 40]
    for part in parts:
        assert np.ptp(xy[part, 0]) == 90.0 and np.ptp(xy[part, 1]) == 30.0
    small = np.arange(30)
    assert [p.tolist() for p in within_cap([small], xy, 50)] == [small.tolist()]


def test_a_check_failed_in_one_submodel_is_the_surveys() -> None:
    """The survey's verdict takes each check from the submodel where it failed: a group placed by its GPS alone in
    the second submodel makes the survey's verdict doubtful too."""
    tied, apart = quality.groups_placed_by_gps(0, 0, 5.0), quality.groups_placed_by_gps(4, 1, 5.0)
    agreeing = quality.gps_agreement(20, 20, 5.0)
    chosen = failing_first([[agreeing, tied], [agreeing, apart]])
    assert sorted(c.name for c in chosen) == ["gps_agreement", "groups_placed_by_gps"]
    assert [c for c in chosen if not c.passed] == [apart]
    assert "4 images in 1 separate group placed by their GPS alone" in apart.message
    assert failing_first([[tied], [tied]]) == [tied]


def test_image_groups_make_the_submodels_grown_by_the_overlap() -> None:
    names, xy = grid_positions(6, 2, 10.0)  # two rows of six, 10 m apart
    groups = read_groups("# image groups\n" + "".join(f"{n} {'west' if i % 6 < 3 else 'east'}\n"
                                                          for i, n in enumerate(names)) + "\n")
    plan = plan_groups(names, xy, groups, overlap_m=10.5)
    assert [set(s.core) for s in plan] == [{n for n in names if groups[n] == g} for g in ("west", "east")]
    west = plan[0]
    # Grown by the column next to it, and no farther.
    assert set(west.images) - set(west.core) == {names[3], names[9]}


def test_image_groups_file_errors_are_refused(tmp_path) -> None:
    project = Project(tmp_path)
    (tmp_path / "gcp").mkdir()
    (tmp_path / "gcp" / "image_groups.txt").write_text("a.jpg 1\nb.jpg 1 extra\n")
    with pytest.raises(InputError, match="line 2 is not"):
        image_groups(project, "image_groups.txt", ["a.jpg", "b.jpg"])
    (tmp_path / "gcp" / "image_groups.txt").write_text("a.jpg 1\nz.jpg 2\n")
    with pytest.raises(InputError, match="gives no group for 1 of 2 images \\(b.jpg\\)"):
        image_groups(project, "image_groups.txt", ["a.jpg", "b.jpg"])
    for name in ("missing.txt", "../gcp/image_groups.txt", "/etc/passwd", ".."):
        with pytest.raises(InputError, match="no uploaded file named"):
            image_groups(project, name, ["a.jpg"])
    (tmp_path / "gcp" / "image_groups.txt").write_text("a.jpg 1\nb.jpg 2\nz.jpg 2\n")
    assert image_groups(project, "image_groups.txt", ["a.jpg", "b.jpg"]) == {"a.jpg": "1", "b.jpg": "2"}


def _slot(url: str, max_images: int | None, load: int = 0) -> NodeSlot:
    return NodeSlot(url, None, max_images, load)  # type: ignore[arg-type]  # placement never calls the node


def test_submodels_go_to_nodes_they_fit_with_the_least_to_do() -> None:
    small, busy, idle = _slot("small", 20), _slot("busy", None, load=2), _slot("idle", 200)
    placement = Placement([small, busy, idle])
    assert placement.take(50, set()) is idle  # does not fit the small node; the idle one has less to do
    assert placement.take(50, set()) is idle  # one sent there: 1 against the busy node's 2
    assert placement.take(10, set()) is small
    assert placement.take(300, set()) is busy  # only the node without a limit takes 300
    assert placement.take(50, {"busy"}) is idle  # a node tried for this submodel is not tried again
    placement.release(idle)
    placement.lose(busy)
    assert placement.take(300, set()) is None
    assert "busy: lost" in placement.describe() and "small: at most 20 images" in placement.describe()
