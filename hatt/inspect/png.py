"""Explanations as PNG heat maps (matplotlib, Agg backend: no display needed).

One figure per review. HAN: a sentences × words grid, each cell holding its
word and coloured by `sqrt(sentence attention) × word attention` (relative
to the review's maximum), with a strip on the left coloured by the sentence
attention. Flat models: the review's words wrapped into rows of
`FLAT_COLUMNS`, coloured by their weight (relative to the review's maximum).
A HAN sentence longer than `MAX_COLUMNS` words continues on the next rows
(a thin line marks where each sentence starts). Long reviews are cut to
`MAX_ROWS` rows; the figure says so.

Every image is `WIDTH_PX` pixels wide and `png_size(explanation)[1]` high:
`round(DPI * (HEADER_INCHES + ROW_INCHES * rows))` for the rows shown
(at least one).
"""

import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.colors import LinearSegmentedColormap  # noqa: E402

DPI = 100
WIDTH_INCHES = 16.0
WIDTH_PX = int(DPI * WIDTH_INCHES)
HEADER_INCHES = 1.6
ROW_INCHES = 0.34
MAX_ROWS = 30
MAX_COLUMNS = 20  # words per HAN row (longer sentences wrap)
FLAT_COLUMNS = 16  # words per row for flat models
MAX_CHARS = 12

WORD_CMAP = LinearSegmentedColormap.from_list("hatt_words", ["#ffffff", "#0969da"])
SENTENCE_CMAP = LinearSegmentedColormap.from_list("hatt_sentences", ["#ffffff", "#cf222e"])


def _grid(explanation):
    """Rows of (words, shading) to draw, the sentence strip values (or None), notes."""
    e = explanation
    shading = e.display_weights()
    notes = []
    if e.sentence_weights is not None:
        shares = e.sentence_shares()
        top = max(shares, default=0.0) or 1.0
        rows, strip, starts = [], [], []
        for s, (words, shade) in enumerate(zip(e.sentences, shading, strict=True)):
            for i in range(0, len(words), MAX_COLUMNS):  # long sentences wrap onto more rows
                starts.append(i == 0)
                rows.append((words[i : i + MAX_COLUMNS], shade[i : i + MAX_COLUMNS]))
                strip.append(shares[s] / top)
        columns = min(max((len(w) for w, _ in rows), default=1), MAX_COLUMNS)
    else:
        tokens = [t for s in e.sentences for t in s]
        flat_shade = [w for s in shading for w in s]
        rows = [
            (tokens[i : i + FLAT_COLUMNS], flat_shade[i : i + FLAT_COLUMNS])
            for i in range(0, len(tokens), FLAT_COLUMNS)
        ]
        strip, starts = None, None
        columns = FLAT_COLUMNS
    if len(rows) > MAX_ROWS:
        hidden = len(rows) - MAX_ROWS
        notes.append(f"{hidden} more rows not shown")
        rows = rows[:MAX_ROWS]
        strip = None if strip is None else strip[:MAX_ROWS]
        starts = None if starts is None else starts[:MAX_ROWS]
    if e.omitted_words:
        notes.append(f"{e.omitted_words} words of the review were not seen by the model")
    return rows, strip, starts, columns, notes


def _heat(ax, values, cmap):
    """Weights in [0, 1] as cells of `cmap`; NaN cells (no token, no sentence) stay blank."""
    ax.imshow(
        np.ma.masked_invalid(values),
        cmap=cmap,
        vmin=0,
        vmax=1,
        aspect="auto",
        interpolation="nearest",
    )


def png_size(explanation):
    """`(width, height)` in pixels of the PNG :func:`to_png` writes for `explanation`."""
    rows = _grid(explanation)[0]
    return WIDTH_PX, int(round(DPI * (HEADER_INCHES + ROW_INCHES * max(len(rows), 1))))


def _short(word):
    return word if len(word) <= MAX_CHARS else word[: MAX_CHARS - 1] + "…"


def figure(explanation):
    """The matplotlib figure for one explanation (close it when done)."""
    e = explanation
    rows, strip, starts, columns, notes = _grid(e)
    n_rows = max(len(rows), 1)
    width, height = png_size(e)
    fig = plt.figure(figsize=(width / DPI, height / DPI), dpi=DPI)
    top = 1 - (HEADER_INCHES - 0.25) / (height / DPI)
    bottom = 0.15 / (height / DPI)
    left_strip = 0.05 if strip is not None else 0.0
    grid_left = 0.015 + left_strip + (0.01 if strip is not None else 0)
    ax = fig.add_axes([grid_left, bottom, 0.985 - grid_left, top - bottom])
    values = np.full((n_rows, columns), np.nan)
    for r, (_, shade) in enumerate(rows):
        values[r, : len(shade)] = shade
    _heat(ax, values, WORD_CMAP)
    font = 9 if columns <= 16 else 8
    for r, (words, shade) in enumerate(rows):
        for c, (word, value) in enumerate(zip(words, shade, strict=True)):
            ax.text(
                c,
                r,
                _short(word),
                ha="center",
                va="center",
                fontsize=font,
                color="white" if value > 0.6 else "black",
            )
    ax.set_xticks([])
    ax.set_yticks([])
    for spine in ax.spines.values():
        spine.set_color("#d0d7de")
    if strip is not None:
        sx = fig.add_axes([0.015, bottom, left_strip, top - bottom])
        column = np.asarray(strip + [np.nan] * (n_rows - len(strip)))[:, None]
        _heat(sx, column, SENTENCE_CMAP)
        shares = e.sentence_shares()
        sentence = -1
        for r, first in enumerate(starts):
            if first:
                sentence += 1
                sx.text(0, r, f"{shares[sentence]:.2f}", ha="center", va="center", fontsize=8)
                if r:  # a thin line where a new sentence starts
                    ax.axhline(r - 0.5, color="#8c959f", linewidth=0.6)
                    sx.axhline(r - 0.5, color="#8c959f", linewidth=0.6)
        sx.set_xticks([])
        sx.set_yticks([])
    han = e.sentence_weights is not None
    title = e.headline()
    scale = (
        "left strip: sentence attention (red); cells: sqrt(sentence) × word attention (blue)"
        if han
        else f"cells: word {e.score_kind}, rows of {FLAT_COLUMNS} words in reading order"
    )
    subtitle = scale + "; colours relative to this review's maximum"
    if not e.sentences:
        subtitle = "no words: the review is empty for the model"
    fig.text(0.015, 1 - 0.3 / (height / DPI), title, fontsize=12, weight="bold", va="top")
    fig.text(0.015, 1 - 0.72 / (height / DPI), subtitle, fontsize=9, va="top", color="#57606a")
    if notes:
        fig.text(
            0.015, 1 - 1.05 / (height / DPI), "; ".join(notes), fontsize=9, va="top",
            color="#9a6700",
        )  # fmt: skip
    return fig


def to_png(explanation, path):
    """Write one explanation's heat map to `path` (PNG, :func:`png_size` pixels)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig = figure(explanation)
    try:
        with warnings.catch_warnings():
            # Emoji and rare scripts may lack a glyph in the default font: drawn as boxes.
            warnings.filterwarnings("ignore", message=r"Glyph \d+ .* missing from font")
            warnings.filterwarnings("ignore", message=r"Matplotlib currently does not support")
            fig.savefig(path, dpi=DPI, format="png")
    finally:
        plt.close(fig)
    return path


def png_paths(path, count):
    """The file names :func:`write_pngs` uses: `path` itself for one review,
    else `stem_1.png`, `stem_2.png`, ... next to it."""
    path = Path(path)
    if count == 1:
        return [path]
    return [path.with_name(f"{path.stem}_{i}{path.suffix or '.png'}") for i in range(1, count + 1)]


def write_pngs(explanations, path):
    """Write one PNG per explanation (names from :func:`png_paths`); return the paths."""
    paths = png_paths(path, len(explanations))
    for explanation, target in zip(explanations, paths, strict=True):
        to_png(explanation, target)
    return paths
