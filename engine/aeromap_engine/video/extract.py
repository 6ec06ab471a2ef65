"""A video's chosen frames written as photographs: JPEGs at most `resolution` pixels on their longer side, with
the capture time, GPS position and gimbal angles of their moment (from the .srt beside the video) in EXIF and
DJI's XMP."""

from __future__ import annotations

import io
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import cv2
import numpy as np
from PIL import ExifTags, Image

from ..errors import InputError
from ..io.exif_write import dji_xmp, write_gps
from ..log import log
from . import srt
from .subtitles import embedded_srt
from .frames import BLACK_LEVEL, Measure, choose, measure_frame

MEASURE_WIDTH = 320  # px: motion, sharpness and darkness are measured on frames this wide
OVERLAP = 0.9  # share of a frame that the next chosen frame sees again (along the motion)
JPEG_QUALITY = 95


def _frames(path: Path) -> Iterator[np.ndarray]:
    capture = cv2.VideoCapture(str(path))
    try:
        while True:
            ok, frame = capture.read()
            if not ok:
                return
            yield frame
    finally:
        capture.release()


def _fps(path: Path) -> float:
    capture = cv2.VideoCapture(str(path))
    try:
        if not capture.isOpened():
            raise InputError(f"{path.name} cannot be read as a video (MP4, MOV or AVI)")
        fps = capture.get(cv2.CAP_PROP_FPS)
    finally:
        capture.release()
    if not fps or not np.isfinite(fps) or fps <= 0:
        raise InputError(f"{path.name} states no frame rate: its frames cannot be timed against the telemetry")
    return float(fps)


def measure(path: Path) -> Measure:
    """Every frame's darkness, sharpness and motion, on a small grey copy; a black frame's motion is taken as
    none and the next is measured against the last frame that showed something."""
    grey_means, sharpness, motion = [], [], []
    previous: np.ndarray | None = None
    size = (MEASURE_WIDTH, MEASURE_WIDTH)
    for frame in _frames(path):
        height = max(1, round(frame.shape[0] * MEASURE_WIDTH / frame.shape[1]))
        size = (MEASURE_WIDTH, height)
        grey = cv2.resize(cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY), size, interpolation=cv2.INTER_AREA).astype(np.float32)
        mean, sharp, shift = measure_frame(grey, previous)
        black = mean < BLACK_LEVEL
        grey_means.append(mean)
        sharpness.append(sharp)
        motion.append((0.0, 0.0) if black else shift)
        if not black:
            previous = grey
    if not grey_means:
        raise InputError(f"{path.name} holds no frame that can be decoded")
    return Measure(np.array(grey_means), np.array(sharpness), np.array(motion), size[0], size[1])


def telemetry_of(video: Path) -> tuple[list[srt.Record], str] | None:
    """The records of the .srt beside the video (same name, any case), else of the subtitle track inside it, and
    which it was; None without either."""
    for candidate in video.parent.iterdir():
        if candidate.stem == video.stem and candidate.suffix.lower() == ".srt":
            return _usable(candidate.read_text(errors="replace"), candidate.name), "its .srt"
    text = embedded_srt(video)
    if text is None:
        return None
    return _usable(text, f"the subtitle track of {video.name}"), "the telemetry inside it"


def _usable(text: str, name: str) -> list[srt.Record]:
    records = srt.usable(srt.parse(text, name))
    if not records:
        raise InputError(f"{name} has no GPS fix in any subtitle (0, 0 throughout)")
    return records


def extract(video: Path, out_dir: Path, limit: int, resolution: int) -> list[Path]:
    """Writes the chosen frames of `video` into `out_dir` as `<video>_<frame>.jpg`; answers their paths."""
    fps = _fps(video)
    telemetry = telemetry_of(video)
    records = telemetry[0] if telemetry else None
    chosen = choose(measure(video), OVERLAP, limit)
    if not chosen:
        raise InputError(f"{video.name} has no frame that is neither black nor blurred")
    wanted = set(chosen)
    written = []
    for index, frame in enumerate(_frames(video)):
        if index not in wanted:
            continue
        path = out_dir / f"{video.stem}_{index:06d}.jpg"
        state = srt.state_at(records, index / fps) if records else None
        _write(path, _fit(frame, resolution), state)
        written.append(path)
    log.info("%s: %d frames of %d kept (%s)", video.name, len(written), index + 1,
             f"positions from {telemetry[1]}" if telemetry else "no .srt beside it nor telemetry inside: no positions")
    return written


def _fit(frame: np.ndarray, resolution: int) -> np.ndarray:
    longer = max(frame.shape[:2])
    if longer <= resolution:
        return frame
    scale = resolution / longer
    return cv2.resize(frame, (round(frame.shape[1] * scale), round(frame.shape[0] * scale)), interpolation=cv2.INTER_AREA)


def _write(path: Path, frame: np.ndarray, state: srt.State | None) -> None:
    exif = Image.Exif()
    exif[ExifTags.Base.Software] = "aeromap video frames"
    extra = {}
    if state is not None:
        if state.time is not None:
            _stamp(exif, state.time)
        if state.focal_35mm is not None:
            exif.get_ifd(ExifTags.IFD.Exif)[ExifTags.Base.FocalLengthIn35mmFilm] = int(round(state.focal_35mm))
        write_gps(exif, state.longitude, state.latitude, state.abs_alt)
        attributes = {"drone-dji:GpsLatitude": f"{state.latitude:.9f}", "drone-dji:GpsLongitude": f"{state.longitude:.9f}"}
        if state.abs_alt is not None:
            attributes["drone-dji:AbsoluteAltitude"] = f"{state.abs_alt:+.3f}"
        if state.rel_alt is not None:
            attributes["drone-dji:RelativeAltitude"] = f"{state.rel_alt:+.3f}"
        for name, value in (("Yaw", state.yaw), ("Pitch", state.pitch), ("Roll", state.roll)):
            if value is not None:
                attributes[f"drone-dji:Gimbal{name}Degree"] = f"{value:+.2f}"
        extra["xmp"] = dji_xmp(attributes).encode("utf-8")
    buffer = io.BytesIO()
    Image.fromarray(cv2.cvtColor(frame, cv2.COLOR_BGR2RGB)).save(buffer, "JPEG", quality=JPEG_QUALITY, exif=exif, **extra)
    path.write_bytes(buffer.getvalue())


def _stamp(exif: Image.Exif, time: datetime) -> None:
    stamp = time.strftime("%Y:%m:%d %H:%M:%S")
    exif[ExifTags.Base.DateTime] = stamp
    details = exif.get_ifd(ExifTags.IFD.Exif)
    details[ExifTags.Base.DateTimeOriginal] = stamp
    details[ExifTags.Base.SubsecTimeOriginal] = f"{time.microsecond // 1000:03d}"
