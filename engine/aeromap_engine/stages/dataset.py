"""Dataset stage: find the photographs and check that there is something to process."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PIL import Image

from ..errors import InputError
from ..log import log
from ..options import Option

if TYPE_CHECKING:
    from ..pipeline import StageContext

OPTIONS: list[Option] = []
WEIGHT = 1.0


def run(ctx: "StageContext") -> None:
    files = ctx.project.image_files()
    readable = []
    for i, path in enumerate(files):
        try:
            with Image.open(path) as img:
                img.verify()
            readable.append(path)
        except Exception as exc:  # Pillow raises many kinds for broken files
            log.warning("Skipping %s: not a readable image (%s)", path.name, exc)
        ctx.progress((i + 1) / max(1, len(files)))
    if len(readable) < 2:
        raise InputError(f"Need at least 2 readable images, found {len(readable)} in {ctx.project.images_dir}")
    log.info("Found %d readable images", len(readable))
