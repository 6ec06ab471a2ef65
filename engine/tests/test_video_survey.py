"""A survey flown as a video: a synthetic flight rendered every 5 % of the frame's footprint (as a drone's video
sees the ground go by) by an RTK drone, written as an MP4 with a black stretch and blurred frames, and the DJI
.srt of the positions the aircraft wrote. The engine takes frames from it alone and maps the scene: the frames kept
are neither black nor blurred, and the orthophoto lies on the true one within 2 GSD (median displacement) of the
orthophoto that the same survey's photographs of those moments give."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest

from aeromap_engine import pipeline
from aeromap_engine.project import Project
from aeromap_engine.synthetic import FlightSpec, LensSpec, SceneSpec, SurveySpec, generate
from test_synthetic import OPTIONS, ortho_shifts

VIDEO_SURVEY = SurveySpec(
    scene=SceneSpec(size_m=70.0),
    lens=LensSpec(width=640, height=480),
    flight=FlightSpec(height_m=45.0, forward_overlap=0.95, side_overlap=0.65),
    gps_sigma_horizontal_m=0.02,  # an RTK drone: what is measured is where the frames are put, not a GPS's bias
    gps_sigma_vertical_m=0.03,
    truth_ortho_level=1,
    seed=4,
)
FPS = 4.0
FOCAL_35MM = VIDEO_SURVEY.lens.focal_35mm  # as the Mini and later drones write it in the .srt
BLACK = (6, 7, 8)  # frames replaced by black ones
BLURRED = (14, 15)  # frames blurred as by a jolt


def _srt_block(number: int, lon: float, lat: float, alt: float, rel: float) -> str:
    start, end = (number - 1) / FPS, number / FPS

    def stamp(seconds: float) -> str:
        return f"00:{int(seconds // 60):02d}:{seconds % 60:06.3f}".replace(".", ",")

    return (f"{number}\n{stamp(start)} --> {stamp(end)}\n<font size=\"28\">FrameCnt: {number}, DiffTime: 250ms\n"
            f"2025-06-14 10:30:{int(start) % 60:02d}.000\n[iso: 100] [fnum: 2.8] [focal_len: {FOCAL_35MM:.2f}] [latitude: {lat:.7f}] [longitude: {lon:.7f}] "
            f"[rel_alt: {rel:.3f} abs_alt: {alt:.3f}] </font>\n")


@pytest.mark.long
def test_a_survey_flown_as_a_video(tmp_path: Path, engine_log) -> None:
    truth = generate(tmp_path / "survey", VIDEO_SURVEY, workers=min(2, os.cpu_count() or 1))
    project = Project(tmp_path / "video")
    project.images_dir.mkdir(parents=True)
    video = project.images_dir / "DJI_0001.MP4"
    writer = cv2.VideoWriter(str(video), cv2.VideoWriter_fourcc(*"mp4v"), FPS, (truth.lens.width, truth.lens.height))
    blocks = []
    for number, photo in enumerate(truth.photographs, 1):
        frame = cv2.imread(str(truth.images_dir / photo.name))
        if number - 1 in BLACK:
            frame[:] = 0
        if number - 1 in BLURRED:
            frame = cv2.GaussianBlur(frame, (0, 0), 4)
        writer.write(frame)
        blocks.append(_srt_block(number, *photo.gps, photo.relative_altitude))
    writer.release()
    (project.images_dir / "DJI_0001.SRT").write_text("\n".join(blocks))

    _run(project, engine_log)
    kept = sorted(int(p.stem.split("_")[-1]) for p in project.images_dir.glob("DJI_0001_*.jpg"))
    print(f"\n[video] {len(truth.photographs)} frames, {len(kept)} kept")
    assert 8 <= len(kept) < len(truth.photographs) / 2
    assert not set(kept) & set(BLACK + BLURRED)
    # The same survey's photographs, the ones the frames were made from, with their own metadata.
    photographs = Project(tmp_path / "photographs")
    photographs.images_dir.mkdir(parents=True)
    for index in kept:
        name = truth.photographs[index].name
        os.link(truth.images_dir / name, photographs.images_dir / name)
    _run(photographs, engine_log)
    from_video, from_photographs = _displacement(project, truth), _displacement(photographs, truth)
    print(f"[video] orthophoto against the truth: median displacement {from_video / truth.gsd_m:.2f} GSD from the "
          f"video, {from_photographs / truth.gsd_m:.2f} GSD from its photographs")
    assert from_video <= from_photographs + 2 * truth.gsd_m
    shutil.rmtree(truth.root)


def _run(project: Project, engine_log) -> None:
    with engine_log(), contextlib.redirect_stdout(io.StringIO()):
        pipeline.run(project, OPTIONS)


def _displacement(project: Project, truth) -> float:
    shifts, _ = ortho_shifts(project, truth)
    assert len(shifts) >= 20, "too few textured patches to measure"
    return float(np.median(np.hypot(shifts[:, 0], shifts[:, 1])))
