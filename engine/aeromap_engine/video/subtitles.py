"""Telemetry a drone recorded inside the video: the subtitle track (MP4's mov_text, MOV's tx3g, MKV's SubRip) that
DJI's cameras write with the same text as the .srt beside the video, demuxed with PyAV (FFmpeg) and written out
as an .srt's text for srt.parse."""

from __future__ import annotations

from pathlib import Path

import av

MOV_TEXT_CODECS = {"mov_text"}  # each packet: the text's length in two bytes, the text, then style boxes


def embedded_srt(video: Path) -> str | None:
    """The video's first subtitle track as the text of an .srt (its cues' times from the track's timestamps);
    None when the video has no subtitle track or it holds no text."""
    try:
        container = av.open(str(video))
    except av.FFmpegError:
        return None  # the frame reader names what is wrong with the video
    with container:
        if not container.streams.subtitles:
            return None
        stream = container.streams.subtitles[0]
        cues = []
        for packet in container.demux(stream):
            text = _packet_text(bytes(packet), stream.codec_context.name)
            if packet.pts is None or not text.strip():
                continue
            start = float(packet.pts * packet.time_base)
            cues.append((start, start + float((packet.duration or 0) * packet.time_base), text.strip()))
    if not cues:
        return None
    return "\n".join(f"{n}\n{_stamp(start)} --> {_stamp(max(end, start))}\n{text}\n"
                     for n, (start, end, text) in enumerate(cues, 1))


def _packet_text(payload: bytes, codec: str) -> str:
    if codec in MOV_TEXT_CODECS:
        if len(payload) < 2:
            return ""
        payload = payload[2:2 + int.from_bytes(payload[:2], "big")]
    return payload.decode("utf-8", errors="replace")


def _stamp(seconds: float) -> str:
    millis = round(seconds * 1000)
    hours, rest = divmod(millis, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    return f"{hours:02d}:{minutes:02d}:{rest // 1000:02d},{rest % 1000:03d}"
