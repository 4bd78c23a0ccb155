"""Colours and the second channel (dash, marker) of every chart's series.

The palette is Okabe and Ito's (2008), designed to stay apart under the common colour-vision
deficiencies: simulated for deuteranopia (Machado et al. 2009) its closest two entries are
still about 17 CIE76 units apart, where the palette it replaced had three entries within 2 to
4 of each other. Twelve colours are not enough for every fleet, so colour is never the only
channel: `assign` gives each drawn series a (colour, dash, marker) triple, and two series of
one colour always differ in dash and in marker. The series chart (`charts.history`) imports
this module too, so one series looks alike on every chart of a page.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

PALETTE = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # bluish green
    "#CC79A7",  # reddish purple
    "#56B4E9",  # sky blue
    "#D55E00",  # vermillion
    "#332288",  # indigo (Tol): the four from here on give a fleet's machines a colour each
    "#882255",  # wine (Tol)
    "#117733",  # green (Tol)
    "#661100",  # brown
    "#F0E442",  # yellow: last but one, it is faint on white
    "#000000",  # black: the page script draws it in the text colour on a dark theme
)
"""Okabe–Ito, most legible on both themes first, with four of Tol's that stay as far from
them under deuteranopia (17 CIE76 units at the closest pair, as Okabe–Ito alone): twelve
colours, so a model page's twelve machines each have one and precision takes the dash."""

DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "cross", "star", "hexagon")
PATTERNS = ("", "/", ".", "x", "-", "|", "+", "\\")
"""Bar fills: a bar has no dash, so a fill pattern is its second channel."""


@dataclass(frozen=True)
class Look:
    """One series' look: a colour, and the dash, marker and bar pattern that tell it from
    another series of the same colour."""

    color: str
    dash: str
    symbol: str
    pattern: str


def look(color_index: int, within: int) -> Look:
    """The `within`-th series of colour `color_index` (both counted from 0). Past the
    palette's end colours repeat with the next dash and marker."""
    cycle, color = divmod(color_index, len(PALETTE))
    rank = within + cycle
    # The marker steps one further each time the dashes come round: (dash, marker) pairs
    # stay unique for 48 series of one colour (6 dashes x 8 markers).
    return Look(
        PALETTE[color],
        DASHES[rank % len(DASHES)],
        SYMBOLS[(rank + rank // len(DASHES)) % len(SYMBOLS)],
        PATTERNS[rank % len(PATTERNS)],
    )


def assign(keys: Iterable[tuple[Hashable, Hashable]]) -> dict[tuple[Hashable, Hashable], Look]:
    """A look per (colour group, series) key: one colour per group in sorted order, and a
    dash and marker per series within its group, so that two series sharing a colour never
    share both a dash and a marker (up to 48 series per colour; up to six share neither)."""
    unique = sorted(set(keys), key=lambda k: (str(k[0]), str(k[1])))
    groups = sorted({k[0] for k in unique}, key=str)
    color_of = {g: i for i, g in enumerate(groups)}
    seen: dict[Hashable, int] = {}
    looks = {}
    for key in unique:
        within = seen.get(key[0], 0)
        seen[key[0]] = within + 1
        looks[key] = look(color_of[key[0]], within)
    return looks


def hex_rgb(color: str) -> tuple[float, float, float]:
    """`#RRGGBB` as sRGB components in [0, 1]."""
    text = color.lstrip("#")
    return (int(text[0:2], 16) / 255, int(text[2:4], 16) / 255, int(text[4:6], 16) / 255)


DEUTERANOPIA = (
    (0.367322, 0.860646, -0.227968),
    (0.280085, 0.672501, 0.047413),
    (-0.011820, 0.042940, 0.968881),
)
"""Machado, Oliveira and Fernandes (2009), deuteranopia at severity 1.0, on linear RGB."""


def _linear(c: float) -> float:
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def _lab(rgb: Sequence[float]) -> tuple[float, float, float]:
    """CIELAB (D65) of linear RGB."""
    r, g, b = rgb
    xyz = (
        (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047,
        0.2126 * r + 0.7152 * g + 0.0722 * b,
        (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883,
    )
    f = [t ** (1 / 3) if t > (6 / 29) ** 3 else t / (3 * (6 / 29) ** 2) + 4 / 29 for t in xyz]
    return (116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2]))


def simulate(color: str, matrix: Sequence[Sequence[float]] = DEUTERANOPIA) -> tuple[float, ...]:
    """The linear RGB a reader with the simulated deficiency sees for `color`."""
    rgb = [_linear(c) for c in hex_rgb(color)]
    return tuple(
        min(1.0, max(0.0, sum(m * c for m, c in zip(row, rgb, strict=True)))) for row in matrix
    )


def delta_e(a: str, b: str, matrix: Sequence[Sequence[float]] | None = DEUTERANOPIA) -> float:
    """CIE76 ΔE between two colours as seen through `matrix` (None: normal vision)."""
    if matrix is None:
        la, lb = _lab([_linear(c) for c in hex_rgb(a)]), _lab([_linear(c) for c in hex_rgb(b)])
    else:
        la, lb = _lab(simulate(a, matrix)), _lab(simulate(b, matrix))
    distance: float = sum((x - y) ** 2 for x, y in zip(la, lb, strict=True)) ** 0.5
    return distance
