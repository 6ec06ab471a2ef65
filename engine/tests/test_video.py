"""Videos as photographs (video/): DJI's .srt variants read, empty and truncated ones refused; and a video made
here by flying a window across a Brighton Beach photograph, with a blurred and a black stretch inserted and an .srt
whose track is known: the frames kept are spaced by the view's motion, none blurred or black, each placed where
the .srt's interpolation puts its moment."""

from __future__ import annotations

from datetime import datetime
from fractions import Fraction
from pathlib import Path

import av
import cv2
import numpy as np
import pytest

from aeromap_engine.errors import InputError
from aeromap_engine.io.exif import exif_tags, photo_from_metadata, xmp_packet, xmp_tags
from aeromap_engine.video import srt
from aeromap_engine.video.extract import OVERLAP, extract
from aeromap_engine.video.frames import REACH, Measure, choose
from aeromap_engine.video.subtitles import embedded_srt

PHANTOM4 = """1
00:00:00,000 --> 00:00:01,000
HOME(149.0251,-20.2532) 2017.08.05 14:11:51
GPS(149.0251,-20.2533,16.5) BAROMETER:1.9
ISO:100 Shutter:60 EV: Fnum:2.2

2
00:00:01,000 --> 00:00:02,000
HOME(149.0251,-20.2532) 2017.08.05 14:11:52
GPS(149.0253,-20.2535,18.5) BAROMETER:3.9
ISO:100 Shutter:60 EV: Fnum:2.2
"""

SPARK = """1
00:00:00,000 --> 00:00:01,000
F/2.8, SS 320, ISO 100, EV 0, GPS (-71.2212, 46.8114, 19), D 24.5m, H 10.3m, H.S 0.00m/s, V.S 0.00m/s
"""

MAVIC2 = """1
00:00:00,000 --> 00:00:00,033
<font size="36">SrtCnt : 1, DiffTime : 33ms
2019-06-26 14:20:36,498,046
[iso : 100] [shutter : 1/640.0] [fnum : 280] [ev : 0] [ct : 5600] [color_md : default] [focal_len : 240] \
[latitude : 46.811433] [longtitude : -71.221213] [altitude: 54.930000] </font>
"""

MINI = """1
00:00:00,000 --> 00:00:00,033
<font size="28">FrameCnt: 1, DiffTime: 33ms
2021-07-17 12:29:18.012
[iso: 100] [shutter: 1/1000.0] [fnum: 2.8] [ev: 0] [ct: 5395] [color_md: default] [focal_len: 24.00] \
[dzoom_ratio: 1.00], [latitude: 45.123456] [longitude: -73.123456] [rel_alt: 1.300 abs_alt: 74.812] </font>
"""

MAVIC3 = """1
00:00:00,000 --> 00:00:00,033
<font size="28">SrtCnt : 1, DiffTime : 33ms
2023-04-12 10:22:33.123
[iso : 100] [shutter : 1/500.0] [fnum : 2.8] [ev : 0] [dzoom_ratio: 10000, delta:0],[latitude: 45.500001] \
[longitude: -73.500002] [rel_alt: 30.000 abs_alt: 120.000] [gb_yaw: 170.5 gb_pitch: -90.0 gb_roll: 0.0] </font>

2
00:00:00,033 --> 00:00:00,066
<font size="28">SrtCnt : 2, DiffTime : 33ms
2023-04-12 10:22:33.156
[iso : 100] [latitude: 45.500011] [longitude: -73.500002] [rel_alt: 30.100 abs_alt: 120.100] \
[gb_yaw: -170.5 gb_pitch: -89.0 gb_roll: 0.0] </font>
"""


def test_every_format_variant() -> None:
    old = srt.parse(PHANTOM4)
    assert (old[0].longitude, old[0].latitude, old[0].abs_alt, old[0].rel_alt) == (149.0251, -20.2533, 16.5, 1.9)
    assert old[1].time == datetime(2017, 8, 5, 14, 11, 52) and old[1].start == 1.0
    spark = srt.parse(SPARK)[0]
    assert (spark.longitude, spark.latitude, spark.abs_alt, spark.rel_alt) == (-71.2212, 46.8114, None, 10.3)
    mavic2 = srt.parse(MAVIC2)[0]
    assert (mavic2.latitude, mavic2.longitude, mavic2.abs_alt, mavic2.focal_35mm) == (46.811433, -71.221213, 54.93, 24.0)
    assert mavic2.time == datetime(2019, 6, 26, 14, 20, 36, 498000) and mavic2.end == pytest.approx(0.033)
    mini = srt.parse(MINI)[0]
    assert (mini.latitude, mini.longitude, mini.rel_alt, mini.abs_alt) == (45.123456, -73.123456, 1.3, 74.812)
    assert mini.focal_35mm == 24.0 and spark.focal_35mm is None
    mavic3 = srt.parse(MAVIC3)
    assert (mavic3[0].yaw, mavic3[0].pitch, mavic3[0].roll) == (170.5, -90.0, 0.0)
    assert srt.parse(MAVIC3.replace("\n", "\r\n"))[1].latitude == 45.500011


def test_interpolation_between_records() -> None:
    records = srt.parse(MAVIC3)
    middle = srt.state_at(records, 0.0165)
    assert middle.latitude == pytest.approx(45.500006)
    assert middle.abs_alt == pytest.approx(120.05) and middle.pitch == pytest.approx(-89.5)
    assert abs(middle.yaw) == pytest.approx(180.0)  # across north the short way round, not through 0
    assert middle.time == datetime(2023, 4, 12, 10, 22, 33, 139500)
    assert srt.state_at(records, 5.0).latitude == 45.500011  # held after the last record


@pytest.mark.parametrize("text, reason", [
    ("", "is empty"),
    ("\n\n  \n", "is empty"),
    (MAVIC3[:MAVIC3.index("[latitude: 45.500011")], "ends inside its last subtitle"),
    ("1\n00:00:00,000 --> 00:00:01,000\nno telemetry here\n\n" + SPARK.replace("1\n", "2\n", 1), "subtitle 1"),
    ("WEBVTT\n\nnot a subtitle file", "no time span and position in subtitle 1"),
])
def test_empty_truncated_and_foreign_files_are_refused(text: str, reason: str) -> None:
    with pytest.raises(InputError, match=reason):
        srt.parse(text, "DJI_0001.SRT")


def test_choice_follows_the_motion_and_leaves_out_blur_and_black() -> None:
    n = 100
    motion = np.zeros((n, 2))
    motion[1:, 0] = 4.0  # 4 px a frame on 320: a step of 0.2 is 16 frames
    sharpness = np.full(n, 100.0)
    sharpness[30:40] = 5.0  # blurred
    grey = np.full(n, 120.0)
    grey[60:66] = 3.0  # black
    chosen = choose(Measure(grey, sharpness, motion, 320, 240), overlap=0.8, limit=50)
    assert chosen[0] == 0
    assert not any(30 <= c < 40 or 60 <= c < 66 for c in chosen)
    gaps = np.diff(chosen)
    assert gaps.min() >= 16 and gaps.max() <= 26
    assert len(choose(Measure(grey, sharpness, motion, 320, 240), overlap=0.8, limit=3)) == 3


def _flight(video: Path, photo: np.ndarray, frames: int, fps: float) -> tuple[np.ndarray, list[int], list[int]]:
    """A window of 640 x 480 flown across the photograph (scaled to 2000 px wide), 12 px a frame eastwards; frames
    20-27 blurred, 50-55 black. Answers the window's x per frame and the blurred and black frames."""
    scene = cv2.resize(photo, (2000, round(photo.shape[0] * 2000 / photo.shape[1])), interpolation=cv2.INTER_AREA)
    xs = (np.arange(frames) * 12.0).astype(int)
    blurred, black = list(range(20, 28)), list(range(50, 56))
    writer = cv2.VideoWriter(str(video), cv2.VideoWriter_fourcc(*"mp4v"), fps, (640, 480))
    for k, x in enumerate(xs):
        frame = scene[200:680, x:x + 640].copy()
        if k in blurred:
            frame = cv2.GaussianBlur(frame, (0, 0), 6)
        if k in black:
            frame[:] = 2
        writer.write(frame)
    writer.release()
    return xs, blurred, black


def _track_srt(frames: int, fps: float) -> str:
    """One subtitle a second (as older drones write), flying east at 2 m/s from 45.5 N, 73.5 W, 120 m up."""
    blocks = []
    for second in range(int(frames / fps) + 2):
        lon = -73.5 + second * 2.0 / (111_320 * np.cos(np.radians(45.5)))
        stamp = f"00:00:{second:02d},000 --> 00:00:{second + 1:02d},000"
        blocks.append(f"{second + 1}\n{stamp}\n<font size=\"28\">2023-04-12 10:22:{33 + second:02d}.000\n"
                      f"[latitude: 45.500000] [longitude: {lon:.7f}] [rel_alt: 60.000 abs_alt: 120.000] "
                      f"[gb_yaw: 90.0 gb_pitch: -90.0 gb_roll: 0.0] </font>\n")
    return "\n".join(blocks)


def test_a_flown_video_becomes_placed_photographs(datasets: Path, tmp_path: Path) -> None:
    photo = cv2.imread(str(datasets / "brighton_beach" / "images" / "DJI_0018.JPG"))
    fps, frames = 10.0, 110
    video = tmp_path / "DJI_0100.MP4"
    xs, blurred, black = _flight(video, photo, frames, fps)
    (tmp_path / "DJI_0100.SRT").write_text(_track_srt(frames, fps))
    out = tmp_path / "frames"
    out.mkdir()
    written = extract(video, out, limit=500, resolution=4000)
    indices = [int(p.stem.split("_")[-1]) for p in written]
    assert not set(indices) & (set(blurred) | set(black))
    # A step of 1 - OVERLAP of the 640 px frame (64 px at 0.9: about 5 frames at 12 px a frame); the sharpest
    # within REACH steps is taken, and past a blurred or black stretch (8 frames at most, 96 px) the first usable one.
    step = (1 - OVERLAP) * 640
    steps = np.diff(xs[indices])
    assert steps.min() >= step - 6 and np.median(steps) <= REACH * step + 12 and steps.max() <= step + 96 + 24, steps
    assert len(written) >= 8
    _assert_placed_by_the_track(written, indices, frames, fps)
    assert written[0].name == "DJI_0100_000000.jpg"


def _assert_placed_by_the_track(written: list[Path], indices: list[int], frames: int, fps: float) -> None:
    records = srt.parse(_track_srt(frames, fps))
    for path, index in zip(written, indices):
        data = path.read_bytes()
        placed = photo_from_metadata(path.name, 640, 480, exif_tags(data), xmp_tags(xmp_packet(data)))
        truth = srt.state_at(records, index / fps)
        east = (placed.longitude - truth.longitude) * 111_320 * np.cos(np.radians(45.5))
        north = (placed.latitude - truth.latitude) * 111_320
        assert np.hypot(east, north) < 1.0
        assert placed.altitude == pytest.approx(120.0, abs=0.01)
        assert placed.pitch is not None


ASS_HEADER = (b"[Script Info]\nScriptType: v4.00+\n\n[V4+ Styles]\nFormat: Name, Fontname, Fontsize\n"
              b"Style: Default,Arial,16\n\n[Events]\nFormat: Layer, Start, End, Style, Text\n")


def _with_subtitle_track(source: Path, target: Path, srt_text: str) -> None:
    """The video remuxed with the .srt's cues as an MP4 text track (mov_text), as DJI's cameras embed them."""
    with av.open(str(source)) as inp, av.open(str(target), "w") as out:
        video = out.add_stream_from_template(inp.streams.video[0])
        text = out.add_stream("mov_text")
        text.time_base = text.codec_context.time_base = Fraction(1, 1000)
        text.codec_context.subtitle_header = ASS_HEADER
        for packet in inp.demux(inp.streams.video[0]):
            if packet.dts is not None:
                packet.stream = video
                out.mux(packet)
        for block in srt_text.strip().split("\n\n"):
            record, cue = srt.parse(block)[0], "\n".join(block.splitlines()[2:]).encode("utf-8")
            packet = av.Packet(len(cue).to_bytes(2, "big") + cue)
            packet.stream, packet.time_base = text, Fraction(1, 1000)
            packet.pts = packet.dts = round(record.start * 1000)
            packet.duration = round((record.end - record.start) * 1000)
            out.mux(packet)


def test_telemetry_inside_the_video_places_its_frames(datasets: Path, tmp_path: Path) -> None:
    photo = cv2.imread(str(datasets / "brighton_beach" / "images" / "DJI_0018.JPG"))
    fps, frames = 10.0, 60
    plain = tmp_path / "plain.mp4"
    _flight(plain, photo, frames, fps)
    video = tmp_path / "DJI_0200.MP4"
    _with_subtitle_track(plain, video, _track_srt(frames, fps))
    plain.unlink()
    assert "[latitude: 45.500000]" in (embedded_srt(video) or "")
    out = tmp_path / "frames"
    out.mkdir()
    written = extract(video, out, limit=500, resolution=4000)
    assert len(written) >= 4
    _assert_placed_by_the_track(written, [int(p.stem.split("_")[-1]) for p in written], frames, fps)
    assert embedded_srt(tmp_path / "frames" / written[0].name) is None  # not a video: no track


def test_a_video_with_a_broken_srt_is_refused(tmp_path: Path) -> None:
    video = tmp_path / "clip.mp4"
    writer = cv2.VideoWriter(str(video), cv2.VideoWriter_fourcc(*"mp4v"), 10.0, (64, 48))
    for _ in range(5):
        writer.write(np.random.default_rng(0).integers(0, 255, (48, 64, 3), dtype=np.uint8))
    writer.release()
    (tmp_path / "clip.srt").write_text(MAVIC3[:120])
    out = tmp_path / "frames"
    out.mkdir()
    with pytest.raises(InputError, match="clip.srt ends inside its last subtitle"):
        extract(video, out, 500, 4000)
    assert list(out.iterdir()) == []
