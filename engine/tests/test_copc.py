"""The octree of streamed point clouds and the COPC files made from it, read back with laspy's COPC reader."""

from __future__ import annotations

from pathlib import Path

import laspy
import numpy as np
import pytest
from laspy.copc import Bounds
from scipy.spatial import cKDTree

from aeromap_engine.cloud import tiled_octree
from aeromap_engine.cloud.octree import (bounding_cube, build_octree, column_counts, column_depth, column_picks,
                                         level_nodes, morton_codes, subtree_nodes)
from aeromap_engine.cloud.points import PointCloud
from aeromap_engine.cloud.tiled import Tiling, tile_sorted
from aeromap_engine.io.copc import write_copc


def survey(n: int, seed: int = 1) -> np.ndarray:
    """A rolling 200 x 120 m surface in UTM coordinates, as drone clouds are: wide and nearly flat."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 200, n)
    y = rng.uniform(0, 120, n)
    z = 150 + 3 * np.sin(x / 20) + rng.normal(0, 0.05, n)
    return np.c_[x + 576_000.0, y + 5_188_000.0, z]


def test_morton_codes_order_cells_by_their_octree_parents() -> None:
    cells = np.random.default_rng(4).integers(0, 2**17, (10_000, 3))
    codes = morton_codes(cells)
    assert len(np.unique(codes)) == len(np.unique(cells, axis=0))  # one code per cell
    for levels in (1, 5, 16):  # a cell's ancestor `levels` up has the code shifted right by three bits a level
        assert np.array_equal(codes >> np.uint64(3 * levels), morton_codes(cells >> levels))
    assert morton_codes(np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1]])).tolist() == [4, 2, 1]


def test_every_point_lands_in_one_node_inside_its_cube() -> None:
    xyz = survey(300_000)
    cube = bounding_cube(xyz)
    nodes = build_octree(xyz, cube, cells=64, max_points=20_000)
    members = np.concatenate(list(nodes.values()))
    assert np.array_equal(np.sort(members), np.arange(len(xyz)))
    for (depth, x, y, z), indices in nodes.items():
        size = 2 * cube.halfsize / 2**depth
        low = cube.origin + size * np.array([x, y, z])
        assert (xyz[indices] >= low - 1e-6).all() and (xyz[indices] <= low + size + 1e-6).all()
        # A node's parent exists: the tree has no gaps a reader would stop at.
        if depth > 0:
            assert (depth - 1, x // 2, y // 2, z // 2) in nodes
    # The root is a thin sample that still covers the whole area: at most one point per cell of its grid.
    root = xyz[nodes[(0, 0, 0, 0)]]
    assert len(root) <= 64 * 64 * 64 and len(root) < len(xyz) / 10
    assert np.ptp(root[:, 0]) > 190 and np.ptp(root[:, 1]) > 110
    leaves = [key for key in nodes if not any((key[0] + 1, 2 * key[1] + i, 2 * key[2] + j, 2 * key[3] + k) in nodes
                                              for i in (0, 1) for j in (0, 1) for k in (0, 1))]
    assert all(len(nodes[key]) <= 20_000 for key in leaves if key[0] > 0)


def test_a_tree_built_column_by_column_holds_every_point_once_without_gaps() -> None:
    xyz = survey(300_000, seed=5)
    cube = bounding_cube(xyz)
    depth = 3
    columns = np.floor((xyz[:, :2] - cube.origin[:2]) / (2 * cube.halfsize / 2**depth)).astype(np.int64)
    nodes: dict = {}
    upper: list[list[np.ndarray]] = [[] for _ in range(depth)]
    for column in np.unique(columns, axis=0):
        members = np.flatnonzero((columns == column).all(axis=1))
        picks = column_picks(xyz[members], cube, depth, cells=64)
        for level, chosen in enumerate(picks):
            upper[level].append(members[chosen])
        rest = np.setdiff1d(np.arange(len(members)), np.concatenate(picks))
        for key, inside in subtree_nodes(xyz[members[rest]], cube, depth, 64, 20_000, 10).items():
            assert key not in nodes
            nodes[key] = members[rest][inside]
    for level, parts in enumerate(upper):
        taken = np.concatenate(parts)
        for key, inside in level_nodes(xyz[taken], cube, level).items():
            nodes[key] = taken[inside]
    assert np.array_equal(np.sort(np.concatenate(list(nodes.values()))), np.arange(len(xyz)))
    for (level, x, y, z), indices in nodes.items():
        size = 2 * cube.halfsize / 2**level
        low = cube.origin + size * np.array([x, y, z])
        assert (xyz[indices] >= low - 1e-6).all() and (xyz[indices] <= low + size + 1e-6).all()
        if level > 0:
            assert (level - 1, x // 2, y // 2, z // 2) in nodes
    # The upper levels are thin samples, as in the tree built at once: one point per sample cell at most,
    # where a sample cell lies inside one column (levels at most log2(cells) above the columns).
    assert len(nodes[(0, 0, 0, 0)]) <= 64**3 and len(nodes[(0, 0, 0, 0)]) < len(xyz) / 50


def test_column_depth_is_the_shallowest_that_keeps_columns_small() -> None:
    counts = np.full((16, 16), 10)  # 2560 points, at depth 4
    assert column_depth(counts, 2560) == 1
    assert column_depth(counts, 640) == 1  # four columns of 640
    assert column_depth(counts, 639) == 2
    assert column_depth(counts, 5) == 4  # not even the finest columns are small enough
    xyz = survey(10_000)
    assert column_counts(xyz, bounding_cube(xyz), 4).sum() == len(xyz)


@pytest.mark.parametrize("part_points", [1_000_000, 40_000])
def test_copc_file_answers_a_box_query_with_exactly_the_points_inside(tmp_path: Path, part_points: int,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """At once, and column by column (a cloud larger than PART_POINTS)."""
    monkeypatch.setattr(tiled_octree, "PART_POINTS", part_points)
    xyz = survey(200_000, seed=2)
    rgb = np.random.default_rng(3).integers(0, 256, (len(xyz), 3)).astype(np.uint8)
    offset = (576_000.0, 5_188_000.0)
    local = PointCloud((xyz - [*offset, 0.0]).astype(np.float32), rgb, np.full(len(xyz), 3, np.uint8))
    tiled = tile_sorted([local], Tiling.fitting([local]), tmp_path / "tiled.ply", tmp_path)
    xyz = np.concatenate([part.xyz for part in tiled.parts(offset)])  # float32 in the world frame, as stored
    path = tmp_path / "cloud.copc.laz"
    nodes = write_copc(path, tiled, offset, "EPSG:32615", tmp_path)
    assert nodes > 1
    # The CRS is a WKT extended VLR (laspy's COPC reader does not load those; its LAS reader does).
    with laspy.open(str(path)) as las:
        assert las.header.parse_crs().to_epsg() == 32615
    with laspy.CopcReader.open(str(path)) as copc:
        header = copc.header
        assert header.version.minor == 4 and header.point_format.id == 7
        assert header.point_count == len(xyz)
        assert np.allclose(header.mins, xyz.min(axis=0), atol=0.001)
        assert np.allclose(header.maxs, xyz.max(axis=0), atol=0.001)
        # Every point comes back once, to the millimetre of the format.
        everything = copc.query()
        stored = np.c_[everything.x, everything.y, everything.z]
        assert len(stored) == len(xyz) and cKDTree(stored).query(xyz)[0].max() < 0.001
        # A box query reads only the nodes it touches, and answers exactly the stored points inside.
        low, high = np.array([576_050.0, 5_188_030.0, 0.0]), np.array([576_080.0, 5_188_060.0, 1000.0])
        found = copc.query(Bounds(mins=low, maxs=high))
        wanted = stored[((stored >= low) & (stored <= high)).all(axis=1)]
        found_xyz = np.c_[found.x, found.y, found.z]
        assert 0 < len(found) == len(wanted)
        assert np.allclose(found_xyz[np.lexsort(found_xyz.T)], wanted[np.lexsort(wanted.T)], atol=1e-9)
        # Colours are 16-bit, as the format defines, and the view count travels in user_data.
        assert int(np.asarray(everything.red).max()) == 255 * 257
        assert set(np.asarray(everything.user_data).tolist()) == {3}
