"""Photometric corrections of the photographs: each camera's vignetting (brightness falling off towards the corners
of the frame) and each photograph's exposure gain per band, estimated from the sparse points that several
photographs see (the same ground at different places in their frames and under different exposures), and divided
out of every photograph before the dense cloud is coloured, the model textured and the orthophoto mosaicked, so
that uniform ground (fields, sand, roofs) shows no photograph's footprint.

The model, in logarithms, for point j seen in photograph k (band b):

    log I = log g_kb + v_c(r) + log L_jb,    v_c(r) = a1 r^2 + a2 r^4 + a3 r^6

with r the distance from camera c's principal point over half the frame's diagonal. It is solved by sparse least
squares with the points' radiances L as unknowns, reweighted (Huber) so that occlusions, moving things and
glints do not pull it, with the geometric mean of the gains held at 1 in every band: the survey's radiometry
stays as it was (no stretch, no matching to a look); only the differences between photographs go. It is held in
each group of photographs that shared points tie together: nothing compares the exposures of two groups that
share none (a survey in two parts), and one mean over both let the solver trade one group's gains for its points'
radiances, lighting one group up and darkening the other.

The ground also looks brighter towards the antisolar point (the hotspot: shadows hide behind what casts them), a
soft disc repeated photograph by photograph; and away from it, fields and crops still look brighter looking away
from the sun than towards it (the first-order term of their reflectance's dependence on the viewing angle), a
gradient across every frame that turns with the sun, not with the camera, which no gain or radially symmetric
fall-off takes out and which leaves steps where two photographs meet. Where the rays are known, the terms

    h_b(alpha) = A_b exp(-alpha / w),    alpha: the angle between the ray and the sunlight's direction
    s_b . ray,                           s_b perpendicular to the survey's mean view (the view slope)

join the model: the sunlight's direction is searched for in the residuals of the model without them, over
directions around the photographs' mean view; then A_b and s_b are solved with everything else, for each of a
few widths w, and the fit with the least (Huber) cost kept; last, the direction is moved to where the whole model
fits best (the search sees residuals that the gains and fall-off have taken part of the hotspot into, and finds
its peak too far out). The hotspot is kept only when it brightens by at
least MIN_HOTSPOT, explains a share of the residuals and lowers the cost; the view slope when it brightens the
frames' edges by at least MIN_VIEW_SLOPE; each only when it brightens the bands alike (within MAX_VIEW_SPREAD).
Both are divided out of every pixel along its ray.
"""

from .estimate import estimate
from .model import Frame, Hotspot, Observations, Photometry, ViewSlope, applied, kernel, load, log_falloff, write
from .view_angle import cone, find_hotspot, perpendiculars

__all__ = ["Frame", "Hotspot", "Observations", "Photometry", "ViewSlope", "applied", "cone", "estimate",
           "find_hotspot", "kernel", "load", "log_falloff", "perpendiculars", "write"]
