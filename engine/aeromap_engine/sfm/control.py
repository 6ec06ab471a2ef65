"""Ground control points in a reconstruction: how their marks are read, where the model puts them, and how far
that is from where they are.

The engine works in the stored pixel layout of each photograph (EXIF orientation ignored), but gcp_list.txt may
give the pixels of a photograph turned upright by its EXIF orientation, as an image viewer shows it: ODM's tools
and others differ. Each photograph with a non-trivial orientation is read both ways, and the reading whose marks'
rays meet in the model is kept.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pycolmap

from ..io.gcp import ControlPoint, GcpObservation

ODM_TO_COLMAP_PIXEL = 0.5  # gcp_list.txt puts the first pixel's centre at 0, COLMAP at 0.5
# A mark's distance from where the rays of the point's other marks meet, beyond which the marks do not show one
# point, as a share of the photograph's longer side (5 px at 1000 px, 20 px at 4000 px): hand-marked points
# fall within a few pixels.
MAX_MARK_MISFIT = 0.005
MISFIT_CAP = 20.0  # times MAX_MARK_MISFIT: what one mark that cannot be right costs a reading
READING_ROUNDS = 3  # passes over the photographs when choosing each one's reading


@dataclass(frozen=True)
class ControlResidual:
    name: str
    images: int  # registered images that observe the point
    delta: tuple[float, float, float]  # modelled minus surveyed position, metres
    reprojection_px: float  # mean distance between the marked pixels and the projection of the surveyed point

    @property
    def horizontal_m(self) -> float:
        return float(np.hypot(self.delta[0], self.delta[1]))

    @property
    def vertical_m(self) -> float:
        return float(abs(self.delta[2]))

    @property
    def distance_m(self) -> float:
        return float(np.hypot(self.horizontal_m, self.vertical_m))


@dataclass(frozen=True)
class MarkFit:
    """How well the rays through a point's marks meet: each mark's distance in pixels from the projection of the
    point they triangulate, as a share of its photograph's longer side."""
    name: str
    misfits: dict[str, float]  # image name -> share of the image's longer side

    @property
    def worst(self) -> float:
        return max(self.misfits.values(), default=0.0)

    @property
    def meets(self) -> bool:
        return self.worst <= MAX_MARK_MISFIT


def stored_pixel(pixel: tuple[float, float], orientation: int, width: int, height: int) -> tuple[float, float]:
    """The stored image's pixel (ODM's convention, first pixel's centre at 0) of a pixel of the image turned
    upright by its EXIF orientation (1 to 8); `width` and `height` are the stored image's."""
    u, v = pixel[0] + 0.5, pixel[1] + 0.5  # to coordinates whose frame runs from 0 to the size
    x, y = {1: (u, v), 2: (width - u, v), 3: (width - u, height - v), 4: (u, height - v), 5: (v, u),
            6: (v, height - u), 7: (width - v, height - u), 8: (width - v, u)}.get(orientation, (u, v))
    return x - 0.5, y - 0.5


def read_marks(points: list[ControlPoint], upright: set[str], orientations: dict[str, int],
               sizes: dict[str, tuple[int, int]]) -> list[ControlPoint]:
    """The points with their marks in the stored pixel layout, those on the images named in `upright` read as
    pixels of the image turned upright by its EXIF orientation."""
    def stored(observation: GcpObservation) -> GcpObservation:
        if observation.image not in upright:
            return observation
        pixel = stored_pixel(observation.pixel, orientations[observation.image], *sizes[observation.image])
        return replace(observation, pixel=pixel)
    return [replace(point, observations=[stored(o) for o in point.observations]) for point in points]


def turned_images(points: list[ControlPoint], orientations: dict[str, int]) -> set[str]:
    """The marked photographs whose EXIF orientation turns or mirrors them."""
    return {o.image for p in points for o in p.observations if orientations.get(o.image, 1) not in (0, 1)}


def choose_reading(reconstruction: pycolmap.Reconstruction, points: list[ControlPoint],
                   orientations: dict[str, int]) -> set[str]:
    """The turned photographs whose marks are read upright: the choice, per photograph, under which the rays
    of every point's marks meet best. Starts from the better of all stored and all upright, then changes one
    photograph at a time while that helps; a photograph whose marks no other photograph's meet keeps the
    start's reading."""
    turned = turned_images(points, orientations)
    if not turned:
        return set()
    sizes = {name: (image.camera.width, image.camera.height) for image in reconstruction.images.values()
             if (name := image.name) in turned}
    turned &= set(sizes)

    def cost(upright: set[str]) -> float:
        return sum(_reading_cost(reconstruction, point)
                   for point in read_marks(points, upright, orientations, sizes))

    upright = min((set(), set(turned)), key=cost)
    best = cost(upright)
    for _ in range(READING_ROUNDS):
        changed = False
        for name in sorted(turned):
            candidate = upright ^ {name}
            if (value := cost(candidate)) < best:
                upright, best, changed = candidate, value, True
        if not changed:
            break
    return upright


def _reading_cost(reconstruction: pycolmap.Reconstruction, point: ControlPoint) -> float:
    """How badly the point's marks meet, each mark's misfit capped: a mark that cannot be right costs the same
    however far off it is."""
    cap = MISFIT_CAP * MAX_MARK_MISFIT
    marked = placed_marks(reconstruction, point)
    if marked < 2:
        return 0.0
    fit = mark_fit(reconstruction, point)
    if fit is None:
        return cap * marked
    return float(sum(min(value, cap) for value in fit.misfits.values()))


def placed_marks(reconstruction: pycolmap.Reconstruction, point: ControlPoint) -> int:
    """How many of the point's marks lie on registered photographs."""
    return sum(_posed(reconstruction, o.image) is not None for o in point.observations)


def mark_fit(reconstruction: pycolmap.Reconstruction, point: ControlPoint) -> MarkFit | None:
    """How far each of the point's marks lies from the projection of the point their rays meet at; None when
    they do not meet in front of two registered cameras. A mark outside its photograph counts as lying its
    photograph's size away."""
    xyz = triangulate(reconstruction, point)
    if xyz is None:
        return None
    misfits = {}
    for observation in point.observations:
        image = _posed(reconstruction, observation.image)
        if image is None:
            continue
        side = float(max(image.camera.width, image.camera.height))
        marked = np.asarray(observation.pixel, dtype=np.float64) + ODM_TO_COLMAP_PIXEL
        projected = image.project_point(xyz)
        inside = 0 <= marked[0] <= image.camera.width and 0 <= marked[1] <= image.camera.height
        misfits[observation.image] = float(np.linalg.norm(np.asarray(projected).ravel() - marked)) / side \
            if projected is not None and inside else 1.0
    return MarkFit(point.name, misfits)


def stray_mark(reconstruction: pycolmap.Reconstruction, point: ControlPoint) -> str | None:
    """The one photograph whose mark keeps a point's marks from meeting, when leaving it out makes the others
    (at least two) meet; None when no single mark is to blame."""
    if len(point.observations) < 3:
        return None
    for observation in point.observations:
        rest = replace(point, observations=[o for o in point.observations if o is not observation])
        fit = mark_fit(reconstruction, rest)
        if fit is not None and len(fit.misfits) >= 2 and fit.meets:
            return observation.image
    return None


def triangulate(reconstruction: pycolmap.Reconstruction, point: ControlPoint) -> np.ndarray | None:
    """The point where the rays through its marked pixels meet, in the model's frame; None when fewer than two
    registered images mark it or the rays do not meet in front of the cameras."""
    poses, rays = [], []
    for observation in point.observations:
        image = _posed(reconstruction, observation.image)
        if image is None:
            continue
        pixel = np.asarray(observation.pixel, dtype=np.float64) + ODM_TO_COLMAP_PIXEL
        ray = image.camera.cam_ray_from_img(pixel)
        if ray is None:
            continue
        poses.append(np.asarray(image.cam_from_world().matrix()))
        rays.append(ray)
    if len(poses) < 2:
        return None
    xyz = pycolmap.triangulate_multi_view_point(poses, np.array(rays))
    if xyz is None:
        return None
    xyz = np.asarray(xyz, dtype=np.float64).ravel()
    in_front = all((pose[:, :3] @ xyz + pose[:, 3])[2] > 0 for pose in poses)
    return xyz if in_front else None


def residual(reconstruction: pycolmap.Reconstruction, point: ControlPoint, surveyed: np.ndarray
             ) -> ControlResidual | None:
    """How far the model's position of a control point lies from its surveyed position (both in the world
    frame), and how far its projection falls from the marked pixels."""
    modelled = triangulate(reconstruction, point)
    if modelled is None:
        return None
    errors = []
    for observation in point.observations:
        image = _posed(reconstruction, observation.image)
        if image is None:
            continue
        projected = image.project_point(surveyed)
        if projected is not None:
            marked = np.asarray(observation.pixel, dtype=np.float64) + ODM_TO_COLMAP_PIXEL
            errors.append(float(np.linalg.norm(np.asarray(projected).ravel() - marked)))
    delta = modelled - surveyed
    return ControlResidual(point.name, len(errors), (float(delta[0]), float(delta[1]), float(delta[2])),
                           float(np.mean(errors)) if errors else float("nan"))


def _posed(reconstruction: pycolmap.Reconstruction, name: str) -> pycolmap.Image | None:
    image = reconstruction.find_image_with_name(name)
    return image if image is not None and image.has_pose else None
