"""Explanations as one self-contained HTML page, in the style of the HAN paper.

Every review is a card: a header with the prediction, the true label when
known, the model family and the kind of score; then one line per sentence
with a red band whose strength is the sentence's weight and its words
highlighted in blue by their weight (Yang et al. 2016, figure 5). Hovering
a word or a band shows its weights (`title` attributes). The page has inline
CSS only: no scripts, no fonts, no images, no network.

`review_html` renders one review as an HTML fragment (styled by `CSS`): the
one renderer, used for each card of `to_html` / `write_html` and by the page
of `hatt serve`.

`write_html` keeps pages usable for thousands of reviews: at most
`max_reviews` reviews (200 by default, about 4 MB) a page, in several
linked pages (`out.html`, `out-2.html`, `out-3.html`, ...).
"""

import html
from pathlib import Path

import hatt

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 60em; color: #1f2328; background: #fff; line-height: 1.6; }
h1 { font-size: 1.4em; margin-bottom: .2em; }
.meta, .legend { color: #57606a; font-size: .9em; }
.legend span.swatch { display: inline-block; width: 8em; height: .9em; vertical-align: middle;
                      border: 1px solid #d0d7de; margin: 0 .4em; }
.review { border: 1px solid #d0d7de; border-radius: 6px; margin: 1.5em 0; padding: .8em 1em; }
.review h2 { font-size: 1.05em; margin: 0 0 .5em 0; }
.tag { display: inline-block; padding: 0 .5em; border-radius: 1em; font-size: .85em;
       margin-right: .3em; background: #eaeef2; }
.tag.pos { background: #dafbe1; } .tag.neg { background: #ffebe9; }
.tag.wrong { background: #cf222e; color: #fff; } .tag.right { background: #1a7f37; color: #fff; }
.sentence { display: flex; align-items: stretch; margin: 2px 0; }
.band { flex: 0 0 3.2em; margin-right: .6em; border-radius: 3px; font-size: .75em;
        text-align: right; padding-right: .3em; color: #57606a; }
.words { flex: 1; }
.words span { padding: 1px 2px; border-radius: 3px; }
.gap { color: #57606a; font-style: italic; margin: .3em 0 .3em 3.8em; }
nav.pages { margin: 1em 0; padding: .4em .8em; background: #f6f8fa; border-radius: 6px; }
nav.pages a { margin: 0 .3em; }
details { margin-top: .6em; font-size: .85em; color: #57606a; }
details div { white-space: pre-wrap; }
"""

SENTENCE_RGB = (207, 34, 46)  # red band, as in the HAN paper
WORD_RGB = (9, 105, 218)  # blue words


def _rgba(rgb, alpha):
    return f"rgba({rgb[0]},{rgb[1]},{rgb[2]},{alpha:.3f})"


def _class_name(e, index):
    """The name of class `index` for `e` (its `class_names` when it has them)."""
    names = getattr(e, "class_names", None)
    if names and 0 <= index < len(names):
        return str(names[index])
    return {1: "positive", 0: "negative"}.get(index, "?")


def _prediction_tag(e):
    """The predicted class and its probability (binary: also `p(positive)`)."""
    esc = html.escape
    label = getattr(e, "predicted_label", None)
    if label is not None:
        probability = float(e.predicted_probability)
        text = f"predicted {esc(str(label))} (p = {probability:.3f})"
    else:
        text = f"predicted {_class_name(e, e.prediction)} (p(positive) = {e.probability:.3f})"
    kind = "pos" if e.prediction else "neg"
    if len(getattr(e, "class_names", None) or ()) > 2:
        kind = "class"
    return f'<span class="tag {kind}">{text}</span>'


def _tags(e):
    """The header tags of a review: prediction, true label, family and score kind."""
    esc = html.escape
    tags = [_prediction_tag(e)]
    if e.label is not None:
        right = e.label == e.prediction
        tags.append(
            f'<span class="tag {"right" if right else "wrong"}">'
            f"true {esc(_class_name(e, e.label))}"
            f" · {'correct' if right else 'wrong'}</span>"
        )
    tags.append(f'<span class="tag">{esc(e.family)} · {esc(e.score_kind)}</span>')
    return "".join(tags)


def _sentence_rows(e):
    """One `<div class="sentence">` per sentence (band + highlighted words), gaps included."""
    esc = html.escape
    parts = []
    shares = e.sentence_shares()
    top_share = max(shares, default=0.0) or 1.0
    shading = e.display_weights()
    document = e.document_weights()
    han = e.sentence_weights is not None
    gap = (
        f'<div class="gap">[… {e.omitted_words} words not seen by the model …]</div>'
        if e.omitted_words
        else ""
    )
    for s, words in enumerate(e.sentences):
        if e.gap_before == s:
            parts.append(gap)
        share = shares[s]
        band_title = (
            f"sentence attention {share:.4f}" if han else f"sum of its word weights {share:.4f}"
        )
        spans = []
        for i, word in enumerate(words):
            title = f"{e.score_kind} {e.word_weights[s][i]:.4f}"
            if han:
                title += f" within the sentence; share of the review {document[s][i]:.4f}"
            spans.append(
                f'<span style="background:{_rgba(WORD_RGB, 0.85 * shading[s][i])}"'
                f' title="{esc(title)}">{esc(word)}</span>'
            )
        parts.append(
            '<div class="sentence">'
            f'<div class="band" style="background:{_rgba(SENTENCE_RGB, 0.8 * share / top_share)}"'
            f' title="{esc(band_title)}">{share:.2f}</div>'
            f'<div class="words">{" ".join(spans)}</div></div>'
        )
    if e.gap_before is not None and e.gap_before >= len(e.sentences):
        parts.append(gap)
    return parts


def review_html(e, number=1, heading=None):
    """One review's explanation as an HTML fragment: THE renderer of a review.

    `write_html` / `to_html` put one per review on a page; `hatt serve`'s
    page inserts the same fragment for each model it asks. Everything from
    the review (words, raw text, names) is escaped; the fragment has no
    scripts and no external references, only inline colours; style it with
    `CSS`.

    Args:
        e: A `hatt.inspect.Explanation`.
        number: The review's number (its `id="review-N"` and heading).
        heading: The heading's text before the tags; defaults to
            `"Review {number}"`.

    Returns:
        A `<section class="review">` element (str).
    """
    esc = html.escape
    heading = f"Review {number}" if heading is None else heading
    parts = [f'<section class="review" id="review-{int(number)}">']
    parts.append(f"<h2>{esc(heading)} {_tags(e)}</h2>")
    if not e.sentences:
        parts.append('<p class="gap">No words: the review is empty for the model.</p>')
    parts.extend(_sentence_rows(e))
    parts.append(
        f"<details><summary>original text</summary><div>{esc(e.text)}</div></details></section>"
    )
    return "\n".join(parts)


MAX_REVIEWS = 200  # reviews a page of write_html (200 IMDB reviews: about 4 MB)


def to_html(explanations, title="hatt: what the model looked at"):
    """Render explanations as one self-contained HTML page (a str).

    Args:
        explanations: List of `hatt.inspect.Explanation` (any number; for
            many, `write_html` splits them into pages).
        title: The page title.

    Returns:
        The HTML document. Colours are relative to each review: the
        strongest sentence gets the full red band, the strongest word the
        full blue highlight (HAN words: `sqrt(sentence weight) × word
        weight`, as in Yang et al. 2016). Hover shows the weights.
    """
    return _page(explanations, title, first=1, navigation="")


def _page(explanations, title, first, navigation):
    """One page: the header, `navigation` (HTML), reviews numbered from `first`."""
    esc = html.escape
    body = "\n".join(review_html(e, i) for i, e in enumerate(explanations, first))
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>\n"
        f"<h1>{esc(title)}</h1>\n"
        f'<p class="meta">{_summary(explanations)} · hatt {esc(hatt.__version__)}</p>\n'
        f"{_legend(explanations)}\n{navigation}\n{body}\n{navigation}\n</body></html>\n"
    )


def _summary(explanations):
    esc = html.escape
    families = sorted({e.family for e in explanations})
    kinds = sorted({e.score_kind for e in explanations})
    known = [e for e in explanations if e.label is not None]
    summary = f"{len(explanations)} review(s) · model: {esc(', '.join(families)) or '–'}"
    summary += f" · scores: {esc(', '.join(kinds)) or '–'}"
    if known:
        correct = sum(e.label == e.prediction for e in known)
        summary += f" · {correct} of {len(known)} predicted correctly"
    if "saliency" in kinds:
        summary += (
            " · saliency = |gradient × input| of the logit per word, as a share of the "
            "review's total (the CNN has no attention)"
        )
    return summary


def _legend(explanations):
    esc = html.escape
    han = any(e.sentence_weights is not None for e in explanations)
    kinds = sorted({e.score_kind for e in explanations})
    band = "sentence attention" if han else "the sentence's share of the word weights"
    word = (
        "sqrt(sentence attention) × word attention"
        if han
        else "word " + (" / ".join(kinds) or "weight")
    )
    return (
        f'<p class="legend">Band<span class="swatch" style="background:linear-gradient(90deg,'
        f'{_rgba(SENTENCE_RGB, 0)},{_rgba(SENTENCE_RGB, 0.8)})"></span>{esc(band)}; '
        f'words<span class="swatch" style="background:linear-gradient(90deg,'
        f'{_rgba(WORD_RGB, 0)},{_rgba(WORD_RGB, 0.85)})"></span>{esc(word)}. '
        "Both relative to each review (its strongest sentence / word = full colour). "
        "Hover for the weights. Words are the model's tokens (lower-cased, punctuation "
        "dropped).</p>"
    )


def _navigation(page, paths, total, per_page):
    """Links to the other pages of a split page (empty for a single page)."""
    if len(paths) == 1:
        return ""
    first = (page - 1) * per_page + 1
    last = min(page * per_page, total)
    links = [
        f"<b>{k}</b>" if k == page else f'<a href="{html.escape(p.name)}">{k}</a>'
        for k, p in enumerate(paths, 1)
    ]
    around = []
    if page > 1:
        around.append(f'<a href="{html.escape(paths[page - 2].name)}">‹ previous</a>')
    if page < len(paths):
        around.append(f'<a href="{html.escape(paths[page].name)}">next ›</a>')
    return (
        f'<nav class="pages">Reviews {first}–{last} of {total}, page {page} of {len(paths)} '
        f"({per_page} a page) · pages: {' '.join(links)} · {' '.join(around)}</nav>"
    )


def page_paths(path, pages):
    """The files of a `pages`-page `write_html` to `path`: `path`, then `STEM-2.SUFFIX`, ..."""
    path = Path(path)
    return [path] + [path.with_name(f"{path.stem}-{k}{path.suffix}") for k in range(2, pages + 1)]


def write_html(explanations, path, title="hatt: what the model looked at", max_reviews=MAX_REVIEWS):
    """Write the explanations as linked HTML pages of at most `max_reviews` reviews each.

    One page (`path`) when they fit; otherwise `path` holds reviews 1 to
    `max_reviews`, `STEM-2.html` the next ones, and so on (see
    `page_paths`), each page with links to the others at its top and its
    bottom. Reviews keep their numbers across pages.

    Args:
        explanations: List of `hatt.inspect.Explanation`.
        path: The first page (UTF-8); its folder is created.
        title: The page title.
        max_reviews: Reviews a page (a positive int), or `None` for one
            page however long.

    Returns:
        The path of the first page (the others are linked from it).
    """
    if max_reviews is not None and (
        isinstance(max_reviews, bool) or not isinstance(max_reviews, int) or max_reviews < 1
    ):
        raise ValueError(
            f"Expected max_reviews to be a positive int or None. Received: max_reviews={max_reviews!r}"
        )
    explanations = list(explanations)
    per_page = max_reviews or max(len(explanations), 1)
    chunks = [explanations[i : i + per_page] for i in range(0, len(explanations), per_page)]
    paths = page_paths(path, max(len(chunks), 1))
    paths[0].parent.mkdir(parents=True, exist_ok=True)
    for page, (chunk, out) in enumerate(zip(chunks or [[]], paths, strict=True), 1):
        navigation = _navigation(page, paths, len(explanations), per_page)
        out.write_text(
            _page(chunk, title, first=(page - 1) * per_page + 1, navigation=navigation),
            encoding="utf-8",
        )
    return paths[0]
