"""The series' colours stay apart for the three common colour-vision deficiencies.

Each colour is passed through the simulation of Machado, Oliveira & Fernandes (2009, "A physiologically-based
model for simulation of color vision deficiency", IEEE TVCG 15(6)), at full severity, for protanopia,
deuteranopia and tritanopia: their 3 x 3 matrices act on linear RGB. The colour seen is then compared in
CIELAB (D65): two categories stay apart when the distance (Delta E*ab, 1976) is at least ``APART``, five
times the just-noticeable difference of about 2.3. matplotlib's former default cycle (tab10), which is
known to confuse red with green and orange with green, fails the same check.
"""

from __future__ import annotations

import itertools

import matplotlib as mpl
import numpy as np
import pytest

from attn_helpers import plotting

MACHADO_2009 = {  # severity 1.0, linear RGB
    "protanopia": [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]],
    "deuteranopia": [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]],
    "tritanopia": [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602], [0.004733, 0.691367, 0.303900]],
}
APART = 5 * 2.3
SRGB_TO_XYZ = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
WHITE_D65 = np.array([0.95047, 1.0, 1.08883])
#: Every colour that tells categories apart: the palette, black (the context vector) and the guide lines' grey.
CATEGORICAL = [*plotting.OKABE_ITO.values(), plotting.GUIDE_COLOUR]


def seen_as(colours, deficiency: str | None) -> np.ndarray:
    """CIELAB of ``colours`` (hex strings or RGB in [0, 1]) as seen with ``deficiency`` (None: normal vision)."""
    rgb = np.array([mpl.colors.to_rgb(c) for c in colours])  # (n, 3), sRGB
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    if deficiency:
        linear = np.clip(linear @ np.array(MACHADO_2009[deficiency]).T, 0, 1)  # (n, 3) @ (3, 3) -> (n, 3)
    xyz = linear @ SRGB_TO_XYZ.T / WHITE_D65  # (n, 3) @ (3, 3) -> (n, 3)
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.stack([116 * f[:, 1] - 16, 500 * (f[:, 0] - f[:, 1]), 200 * (f[:, 1] - f[:, 2])], axis=1)


def closest_pair(colours, deficiency):
    lab = seen_as(colours, deficiency)
    return min((float(np.linalg.norm(lab[i] - lab[j])), colours[i], colours[j])
               for i, j in itertools.combinations(range(len(colours)), 2))


@pytest.mark.parametrize("deficiency", [None, *MACHADO_2009])
def test_the_series_colours_stay_apart(deficiency):
    distance, a, b = closest_pair(CATEGORICAL, deficiency)
    assert distance >= APART, f"{a} and {b} look alike with {deficiency or 'normal vision'}: Delta E {distance:.1f}"


@pytest.mark.parametrize("deficiency", [None, *MACHADO_2009])
def test_viridis_stays_ordered(deficiency):
    """Heatmaps read by lightness: viridis's lightness still rises from one end to the other."""
    lightness = seen_as(mpl.colormaps["viridis"](np.linspace(0, 1, 32))[:, :3], deficiency)[:, 0]
    assert np.all(np.diff(lightness) > 0)


def test_the_simulation_sees_a_palette_that_fails():
    """The check can fail: matplotlib's tab10 keeps its colours apart for normal vision, not for red-green
    deficiencies, and Machado's simulation leaves grey unchanged."""
    tab10 = [mpl.colors.to_hex(c) for c in mpl.colormaps["tab10"].colors]
    assert closest_pair(tab10, None)[0] >= APART
    assert closest_pair(tab10, "protanopia")[0] < APART
    assert closest_pair(tab10, "deuteranopia")[0] < APART
    for deficiency in MACHADO_2009:
        np.testing.assert_allclose(seen_as(["#808080"], deficiency), seen_as(["#808080"], None), atol=0.5)
