"""Vegetation indices (tiles/formulas.py): values computed by hand on known bands, the band orders a formula can
be read in, and the refusals that name what the raster holds."""

from __future__ import annotations

import numpy as np
import pytest

from aeromap_engine.errors import InputError
from aeromap_engine.tiles.formulas import (FORMULAS, RasterBands, algorithms, auto_bands, band_math, colour_bands,
                                           describe, split_bands, unit_scale)

# An 8-bit RGB orthophoto with its alpha band, as the engine writes it.
RGB = colour_bands([(1, None, "red"), (2, None, "green"), (3, None, "blue"), (4, None, "alpha")])
# Two pixels: (R, G, B) = (51, 153, 102) and (204, 102, 51), that is (0.2, 0.6, 0.4) and (0.8, 0.4, 0.2).
PIXELS = np.array([[51, 204], [153, 102], [102, 51]], dtype=np.uint8)


def index_of(name: str, bands: str, data: np.ndarray, dtype: str) -> np.ndarray:
    """The formula on (bands, pixels) values laid out as `bands` says, each band scaled by its type."""
    index = band_math(name, bands, RasterBands(tuple(range(1, len(data) + 1)), split_bands(bands)))
    return index.formula.evaluate({letter: data[number - 1].astype(np.float32) * np.float32(unit_scale(dtype))
                                   for letter, number in index.numbers.items()})


def test_rgb_indices_of_an_8bit_orthophoto_match_hand_computed_values() -> None:
    # VARI = (G - R) / (G + R - B): 0.4 / 0.4 and -0.4 / 1.0.
    assert index_of("VARI", "RGB", PIXELS, "uint8") == pytest.approx([1.0, -0.4], abs=1e-6)
    # GLI = (2G - R - B) / (2G + R + B): 0.6 / 1.8 and -0.2 / 1.8.
    assert index_of("GLI", "RGB", PIXELS, "uint8") == pytest.approx([1 / 3, -1 / 9], abs=1e-6)
    # EXG = 2G - (R + B), on values scaled to 0..1: 1.2 - 0.6 and 0.8 - 1.0.
    assert index_of("EXG", "RGB", PIXELS, "uint8") == pytest.approx([0.6, -0.2], abs=1e-6)
    # The band order decides which band is which: the same pixels read as BGR swap red and blue.
    assert index_of("VARI", "BGR", PIXELS, "uint8") == pytest.approx([(0.6 - 0.4) / (0.6 + 0.4 - 0.2),
                                                                        (0.4 - 0.2) / (0.4 + 0.2 - 0.8)], abs=1e-6)


def test_ndvi_of_a_four_band_raster_uses_its_near_infrared_band() -> None:
    # Reflectances (floating point, taken as they are): R 0.1 and N 0.5, then R 0.3 and N 0.3, then nothing.
    rgbn = np.array([[0.1, 0.3, np.nan], [0.4, 0.2, 0.2], [0.2, 0.1, 0.1], [0.5, 0.3, 0.4]], dtype=np.float32)
    ndvi = index_of("NDVI", "RGBN", rgbn, "float32")
    assert ndvi[:2] == pytest.approx([0.4 / 0.6, 0.0], abs=1e-6)
    assert np.isnan(ndvi[2])  # no red there: no index


def test_an_index_is_undefined_where_it_divides_by_zero() -> None:
    black = np.zeros((3, 1), dtype=np.uint8)  # VARI = 0 / 0
    assert np.isnan(index_of("VARI", "RGB", black, "uint8")[0])


def test_formulas_know_their_bands_and_the_orders_that_suit_them() -> None:
    assert FORMULAS["VARI"].bands == {"R", "G", "B"} and FORMULAS["MSR"].bands == {"N", "R"}
    assert FORMULAS["NDRE"].bands == {"N", "Re"} and FORMULAS["Thermal K"].bands == {"L"}
    assert FORMULAS["VARI"].filters(3) == ["RGB"]
    assert FORMULAS["NDVI"].filters(3) == ["RGN", "NRG", "NRB"]
    assert FORMULAS["NDVI"].filters(4) == ["RGN", "NRG", "NRB", "RGBN", "GRReN"]
    # A three-band orthophoto offers the formulas of three bands at most, each with its orders.
    listed = {a["id"]: a for a in algorithms(3)}
    assert "NDRE" not in listed and "Thermal C" not in listed
    assert listed["VARI"] == {"id": "VARI", "expr": "(G - R) / (G + R - B)", "filters": ["RGB"],
                              "help": "Visual Atmospheric Resistance Index shows the areas of vegetation.",
                              "range": [-1.0, 1.0]}
    assert describe()["bands"] == ["R", "G", "B", "N", "Re", "L"] and "NDVI (Blue)" in describe()["formulas"]
    # A thermal camera's lone L band, which no WebODM filter is: offered in its own order, for the thermal
    # formulas alone.
    thermal = {a["id"]: a["filters"] for a in algorithms(1, "L")}
    assert thermal == {"Thermal C": ["L"], "Thermal K": ["L"]}
    assert algorithms(1, "?") == [] and FORMULAS["NDVI"].filters(3, "RGB") == ["RGN", "NRG", "NRB"]


def test_band_orders_are_read_letter_by_letter() -> None:
    assert split_bands("GRReN") == ("G", "R", "Re", "N")
    for order in ("rgb", "RGBX", "RR", "RGB "):
        with pytest.raises(InputError, match="unknown bands .*RGB, RGN"):
            split_bands(order)


def test_the_orthophoto_s_own_bands_come_from_their_names_or_colours() -> None:
    assert (RGB.numbers, RGB.order) == ((1, 2, 3), "RGB")
    named = colour_bands([(1, "Blue", "gray"), (2, "Green", "undefined"), (3, "Red", "undefined"),
                          (4, "NIR", "undefined"), (5, "Red Edge", "undefined"), (6, None, "undefined")])
    assert named.order == "BGRNRe?"
    assert band_math("NDRE", "auto", named).numbers == {"N": 4, "Re": 5}
    assert auto_bands("VARI", "auto", RGB) == {"filter": "RGB", "match": True}
    assert auto_bands("VARI", "RGB", RGB) == {"filter": "", "match": None}
    assert auto_bands(None, None, RGB) == {"filter": "", "match": None}


def test_a_formula_the_orthophoto_cannot_feed_is_refused_naming_the_missing_band() -> None:
    with pytest.raises(InputError, match=r"NDVI needs the N band, which the orthophoto does not have \(its bands are RGB\)"):
        band_math("NDVI", "auto", RGB)
    with pytest.raises(InputError, match=r"which bands RGB does not name \(the orthophoto's bands are RGB\)"):
        band_math("NDVI", "RGB", RGB)
    with pytest.raises(InputError, match="bands RGBN names 4 bands, but the orthophoto's bands are RGB"):
        band_math("NDVI", "RGBN", RGB)
    with pytest.raises(InputError, match="unknown formula NDVX: the formulas are NDVI, NDYI"):
        band_math("NDVX", "auto", RGB)
    # WebODM reads bands in the order the query gives: a three-band camera's third band may be near infrared.
    assert band_math("NDVI", "RGN", RGB).numbers == {"R": 1, "N": 3}


def test_integer_bands_are_scaled_to_their_full_scale() -> None:
    assert unit_scale("uint8") == pytest.approx(1 / 255)
    assert unit_scale("uint16") == pytest.approx(1 / 65535)
    assert unit_scale("float32") == 1.0
