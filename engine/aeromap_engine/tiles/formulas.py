"""Vegetation indices of WebODM's Plant Health layer: each formula an expression over band letters (R red, G
green, B blue, N near infrared, Re red edge, L long-wave infrared), with WebODM's names, help texts and value
ranges; the band orders ("camera filters") WebODM offers; and the link between a formula, a band order and the
bands of a raster. Expressions are parsed once into numpy functions, so the list below is the only place a
formula is written. Pure: no file is read here."""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError

BAND_LETTERS = ("R", "G", "B", "N", "Re", "L")
# How a raster names its bands (GDAL band descriptions, as multispectral orthophotos carry them) and colour
# interpretations (as RGB orthophotos carry them), by band letter.
_DESCRIPTIONS = {"red": "R", "green": "G", "blue": "B", "nir": "N", "rededge": "Re", "lwir": "L"}
_INTERPRETATIONS = {"red": "R", "green": "G", "blue": "B"}

# The band orders WebODM offers for a formula, in its order.
CAMERA_FILTERS = ("RGB", "RGN", "NGB", "NRG", "NRB", "RGBN", "GRReN", "BGRNRe", "BGRReN", "RGBNRe", "RGBReN",
                  "BGRNReL", "BGRReNL")

AUTO = "auto"

Values = np.ndarray
Expression = Callable[[Mapping[str, Values]], Values]

_OPERATORS: dict[type, Callable[..., Values]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.Pow: operator.pow, ast.USub: operator.neg, ast.UAdd: operator.pos,
}
_FUNCTIONS: dict[str, Callable[[Values], Values]] = {"sqrt": np.sqrt}


def _compile(node: ast.expr) -> Expression:
    """A numpy function of the bands for an expression's syntax tree: arithmetic, numbers, band letters, sqrt."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        number = np.float32(node.value)
        return lambda bands: number
    if isinstance(node, ast.Name) and node.id in BAND_LETTERS:
        letter = node.id
        return lambda bands: bands[letter]
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        op, left, right = _OPERATORS[type(node.op)], _compile(node.left), _compile(node.right)
        return lambda bands: op(left(bands), right(bands))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
        op, operand = _OPERATORS[type(node.op)], _compile(node.operand)
        return lambda bands: op(operand(bands))
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS
            and len(node.args) == 1 and not node.keywords):
        function, argument = _FUNCTIONS[node.func.id], _compile(node.args[0])
        return lambda bands: function(argument(bands))
    raise ValueError(f"not a band expression: {ast.unparse(node)}")


def split_bands(order: str) -> tuple[str, ...]:
    """The band letters of a band order ("GRReN" -> G, R, Re, N); InputError naming the choices for anything
    else (an unknown letter, a band twice)."""
    letters = tuple(re.findall(r"[A-Z][a-z]*", order))
    if "".join(letters) != order or not set(letters) <= set(BAND_LETTERS) or len(set(letters)) != len(letters):
        raise InputError(f"unknown bands {order}: give {AUTO}, or the raster's bands in order, each once, as the "
                         f"letters {', '.join(BAND_LETTERS)} (such as {', '.join(CAMERA_FILTERS[:6])})")
    return letters


@dataclass(frozen=True)
class Formula:
    """A vegetation index: its expression over band letters, WebODM's help text and the values it spans."""
    id: str
    expression: str
    help: str
    range: tuple[float, float] | None = None
    _function: Expression = field(init=False, repr=False, compare=False)
    bands: frozenset[str] = field(init=False, compare=False)

    def __post_init__(self) -> None:
        tree = ast.parse(self.expression, mode="eval").body
        called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - called
        object.__setattr__(self, "_function", _compile(tree))
        object.__setattr__(self, "bands", frozenset(names))

    def evaluate(self, bands: Mapping[str, Values]) -> Values:
        """The index of float band values (each scaled to 0..1, see unit_scale); NaN where it is undefined (a
        division by zero, a root of a negative number) and where any band is NaN."""
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            values = np.asarray(self._function(bands), dtype=np.float32)
        return np.where(np.isfinite(values), values, np.float32(np.nan))

    def filters(self, max_bands: int, own: str | None = None) -> list[str]:
        """The camera filters (band orders) that hold every band this formula needs, of at most max_bands bands,
        and then the raster's own order where WebODM lists no filter like it (a thermal camera's lone L band)."""
        orders = {f: split_bands(f) for f in CAMERA_FILTERS}
        if own and "?" not in own and own not in orders:
            orders[own] = split_bands(own)
        return [f for f, letters in orders.items() if self.bands <= set(letters) and len(letters) <= max_bands]


FORMULAS: dict[str, Formula] = {f.id: f for f in [
    Formula("NDVI", "(N - R) / (N + R)",
            "Normalized Difference Vegetation Index shows the amount of green vegetation."),
    Formula("NDYI", "(G - B) / (G + B)",
            "Normalized difference yellowness index (NDYI), best model variability in relative yield potential "
            "in Canola."),
    Formula("NDRE", "(N - Re) / (N + Re)",
            "Normalized Difference Red Edge Index shows the amount of green vegetation of permanent or later stage "
            "crops."),
    Formula("NDWI", "(G - N) / (G + N)",
            "Normalized Difference Water Index shows the amount of water content in water bodies."),
    Formula("NDVI (Blue)", "(N - B) / (N + B)",
            "Normalized Difference Vegetation Index shows the amount of green vegetation."),
    Formula("ENDVI", "((N + G) - (2 * B)) / ((N + G) + (2 * B))",
            "Enhanced Normalized Difference Vegetation Index is like NDVI, but uses Blue and Green bands instead of "
            "only Red to isolate plant health."),
    Formula("vNDVI", "0.5268*((R ** -0.1294) * (G ** 0.3389) * (B ** -0.3118))",
            "Visible NDVI is an un-normalized index for RGB sensors using constants derived from citrus, grape, and "
            "sugarcane crop data."),
    Formula("VARI", "(G - R) / (G + R - B)",
            "Visual Atmospheric Resistance Index shows the areas of vegetation.", (-1.0, 1.0)),
    Formula("EXG", "(2 * G) - (R + B)",
            "Excess Green Index (derived from only the RGB bands) emphasizes the greenness of leafy crops such as "
            "potatoes."),
    Formula("TGI", "(G - 0.39) * (R - 0.61) * B",
            "Triangular Greenness Index (derived from only the RGB bands) performs similarly to EXG but with "
            "improvements over certain environments."),
    Formula("BAI", "1.0 / (((0.1 - R) ** 2) + ((0.06 - N) ** 2))",
            "Burn Area Index hightlights burned land in the red to near-infrared spectrum."),
    Formula("GLI", "((G * 2) - R - B) / ((G * 2) + R + B)",
            "Green Leaf Index shows greens leaves and stems.", (-1.0, 1.0)),
    Formula("GNDVI", "(N - G) / (N + G)",
            "Green Normalized Difference Vegetation Index is similar to NDVI, but measures the green spectrum "
            "instead of red."),
    Formula("GRVI", "N / G",
            "Green Ratio Vegetation Index is sensitive to photosynthetic rates in forests."),
    Formula("SAVI", "(1.5 * (N - R)) / (N + R + 0.5)",
            "Soil Adjusted Vegetation Index is similar to NDVI but attempts to remove the effects of soil areas "
            "using an adjustment factor (0.5)."),
    Formula("MNLI", "((N ** 2 - R) * 1.5) / (N ** 2 + R + 0.5)",
            "Modified Non-Linear Index improves the Non-Linear Index algorithm to account for soil areas."),
    Formula("MSR", "((N / R) - 1) / (sqrt(N / R) + 1)",
            "Modified Simple Ratio is an improvement of the Simple Ratio (SR) index to be more sensitive to "
            "vegetation."),
    Formula("RDVI", "(N - R) / sqrt(N + R)",
            "Renormalized Difference Vegetation Index uses the difference between near-IR and red, plus NDVI to "
            "show areas of healthy vegetation."),
    Formula("TDVI", "1.5 * ((N - R) / sqrt(N ** 2 + R + 0.5))",
            "Transformed Difference Vegetation Index highlights vegetation cover in urban environments."),
    Formula("OSAVI", "(N - R) / (N + R + 0.16)",
            "Optimized Soil Adjusted Vegetation Index is based on SAVI, but tends to work better in areas with "
            "little vegetation where soil is visible."),
    Formula("LAI", "3.618 * (2.5 * (N - R) / (N + 6*R - 7.5*B + 1)) * 0.118",
            "Leaf Area Index estimates foliage areas and predicts crop yields.", (-1.0, 1.0)),
    Formula("EVI", "2.5 * (N - R) / (N + 6*R - 7.5*B + 1)",
            "Enhanced Vegetation Index is useful in areas where NDVI might saturate, by using blue wavelengths to "
            "correct soil signals.", (-1.0, 1.0)),
    Formula("Thermal C", "L", "Thermal temperature in Celsius degrees."),
    Formula("Thermal K", "L * 100 + 27315", "Thermal temperature in Centikelvin degrees."),
]}


def formula(name: str) -> Formula:
    """The formula of that name; InputError naming the choices for any other."""
    if name not in FORMULAS:
        raise InputError(f"unknown formula {name}: the formulas are {', '.join(FORMULAS)}")
    return FORMULAS[name]


def algorithms(max_bands: int, own: str | None = None) -> list[dict[str, object]]:
    """WebODM's `algorithms`: the formulas a raster of max_bands bands (in its own order `own`) can hold, each
    with the band orders that suit it."""
    listed = []
    for f in FORMULAS.values():
        filters = f.filters(max_bands, own)
        if filters:
            listed.append({"id": f.id, "expr": f.expression, "help": f.help, "filters": filters,
                           **({"range": list(f.range)} if f.range else {})})
    return listed


def _band_letter(description: str | None, interpretation: str) -> str | None:
    """The letter of a raster band from its description (such as "NIR") or else its colour interpretation (such
    as "red"); None for a band named neither way."""
    by_description = _DESCRIPTIONS.get((description or "").strip().lower().replace(" ", ""))
    return by_description or _INTERPRETATIONS.get(interpretation.lower())


def unit_scale(dtype: str) -> float:
    """The factor that brings a band's values to 0..1: an integer type's full scale (255 for 8-bit orthophotos);
    floating-point values (reflectances, temperatures) are taken as they are."""
    kind = np.dtype(dtype)
    return 1.0 / float(np.iinfo(kind).max) if np.issubdtype(kind, np.integer) else 1.0


@dataclass(frozen=True)
class RasterBands:
    """The colour bands of a raster (its alpha band left out): their numbers in the file and their letters."""
    numbers: tuple[int, ...]
    letters: tuple[str | None, ...]

    @property
    def order(self) -> str:
        """The raster's own band order, such as RGB; a band whose kind is unknown shows as "?"."""
        return "".join(letter or "?" for letter in self.letters)


def colour_bands(bands: Sequence[tuple[int, str | None, str]]) -> RasterBands:
    """The colour bands from (number, description, colour interpretation) of each band of a raster."""
    colour = [(number, _band_letter(description, interpretation))
              for number, description, interpretation in bands if interpretation.lower() != "alpha"]
    return RasterBands(tuple(n for n, _ in colour), tuple(letter for _, letter in colour))


@dataclass(frozen=True)
class BandMath:
    """A formula read from a raster: the raster's band number for each band letter the formula needs."""
    formula: Formula
    numbers: dict[str, int]


def band_math(name: str, bands: str, raster: RasterBands) -> BandMath:
    """The formula `name` on a raster whose bands are in the order `bands` (or the raster's own with "auto").
    InputError for a formula or order that does not exist, an order of more bands than the raster has, and a
    formula that needs a band the order does not name, each saying what the raster holds."""
    f = formula(name)
    order = raster.letters if bands == AUTO else split_bands(bands)
    if len(order) > len(raster.numbers):
        raise InputError(f"bands {bands} names {len(order)} bands, but the orthophoto's bands are {raster.order}")
    missing = [letter for letter in BAND_LETTERS if letter in f.bands and letter not in order]
    if missing:
        needs = f"{f.id} needs the {' and '.join(missing)} band{'s' if len(missing) > 1 else ''}"
        if bands == AUTO:
            raise InputError(f"{needs}, which the orthophoto does not have (its bands are {raster.order})")
        raise InputError(f"{needs}, which bands {bands} does not name (the orthophoto's bands are {raster.order})")
    return BandMath(f, {letter: raster.numbers[order.index(letter)] for letter in f.bands})


def auto_bands(name: str | None, bands: str | None, raster: RasterBands) -> dict[str, object]:
    """WebODM's `auto_bands`: for a formula with bands=auto, the order taken (the raster's own) and whether the
    formula's band orders include it; otherwise nothing."""
    if name is None or bands != AUTO:
        return {"filter": "", "match": None}
    return {"filter": raster.order, "match": raster.order in formula(name).filters(len(raster.numbers), raster.order)}


def describe() -> dict[str, object]:
    """What the service checks a query against: the formulas' names and the band letters."""
    return {"formulas": list(FORMULAS), "bands": list(BAND_LETTERS)}
