"""Videos as photographs: DJI's .srt telemetry read (srt.py), from the file beside the video or the subtitle track
inside it (subtitles.py), frames chosen by how far the view has moved and how sharp they are (frames.py), and
written as JPEGs with the position and attitude of their moment in EXIF and DJI's XMP (extract.py), so that the
rest of the pipeline takes them as any photographs."""
