"""S11, the attention viewer: its data check, the fragment it writes, and (in headless Chromium) what it draws."""
import json
import re
from pathlib import Path

import pytest
import yaml

from attnlab.errors import AttnlabError
from attnlab.maps import check_data
from attnlab.report.viewer_widget import viewer_html
from helpers import CHROMIUM, REPO, playwright_or_skip

SCREENSHOT = Path("/tmp/viewer.png")
CROSS_SCREENSHOT = Path("/tmp/viewer-cross.png")
NASTY = 'Winograd: </script><!--<script> & "quotes" \u2026'


def focused(T: int, focus, p: float) -> list:
    """A causal T x T map: row i puts p on key focus(i) and spreads the rest evenly over its other visible keys."""
    rows = []
    for i in range(T):
        k = min(max(focus(i), 0), i)
        row = [(1 - p) / i if i else 0.0] * (i + 1) + [0.0] * (T - i - 1)
        row[k] = p if i else 1.0
        rows.append(row)
    return rows


def uniform(T: int) -> list:
    return [[1 / (i + 1) if j <= i else 0.0 for j in range(T)] for i in range(T)]


def previous(i):
    return i - 1


def first(i):
    return 0


def itself(i):
    return i


def model(T: int, heads) -> list:
    """Layers of heads, each head given as (focus, p)."""
    return [[focused(T, f, p) for f, p in layer] for layer in heads]


def make_data() -> dict:
    """2 examples, 2 models, 2 layers, 2 heads; one alternative (for M1, layer 0, head 1, in the first example)."""
    a, b = ["the", "cat", "sat", "down"], ["it", "was", "tired"]
    return {"examples": [
        {"id": "ex-a", "label": NASTY, "tokens": a,
         "models": {"M1": model(4, [[(previous, 0.7), (first, 0.6)], [(previous, 0.9), (first, 0.5)]]),
                    "M2": model(4, [[(itself, 0.8), (first, 0.7)], [(itself, 0.6), (previous, 0.8)]])},
         "alternatives": [{"name": "adversarial", "model": "M1", "layer": 0, "head": 1, "weights": uniform(4),
                           "note": "JS divergence 0.41 from the learned weights; output moved by TV 0.008"}]},
        {"id": "ex-b", "label": "Second sentence", "tokens": b,
         "models": {"M1": model(3, [[(previous, 0.7), (first, 0.6)], [(previous, 0.9), (first, 0.5)]]),
                    "M2": model(3, [[(itself, 0.8), (first, 0.7)], [(itself, 0.6), (previous, 0.8)]])}},
    ]}


def other_data() -> dict:
    return {"examples": [{"id": "solo", "label": "Another viewer", "tokens": ["a", "b", "c"],
                          "models": {"X": model(3, [[(first, 0.9)]])}}]}


SOURCE, TARGET = ["le", "chat", "dort"], ["the", "cat", "sleeps"]
CROSS_TOKENS = SOURCE + ["<sep>"] + TARGET  # the decoder steps read tokens 3, 4, 5; tokens 0-2 and 6 never attend


def aligned(i):
    return i - len(SOURCE)  # reading <sep> -> "le", "the" -> "chat", "cat" -> "dort"


def cross(focus, p: float, silent=()) -> list:
    """Cross-attention over CROSS_TOKENS: a decoder step's row puts p on source key focus(i) and spreads the rest
    over the other source keys; the other rows (and those of the steps in silent) are null."""
    n, T = len(SOURCE), len(CROSS_TOKENS)
    rows = []
    for i in range(T):
        if i < n or i == T - 1 or i in silent:
            rows.append(None)
            continue
        row = [(1 - p) / (n - 1)] * n + [0.0] * (T - n)
        row[focus(i)] = p
        rows.append(row)
    return rows


def cross_data() -> dict:
    """1 model, 2 layers, 2 heads of cross-attention; layer 0, head 1 also skips step 4 (to test the mean)."""
    return {"examples": [{"id": "cross", "label": "Cross-attention: le chat dort", "tokens": CROSS_TOKENS,
                          "models": {"enc-dec": [[cross(aligned, 0.6), cross(first, 0.5, silent={4})],
                                                 [cross(aligned, 0.9), cross(first, 0.7)]]},
                          "alternatives": [{"name": "uniform", "model": "enc-dec", "layer": 1, "head": 0,
                                            "weights": cross(aligned, 1 / 3)}]}]}


# --- check_data --------------------------------------------------------------------------------------------

def ex(d, k=0):
    return d["examples"][k]


def head(d, layer=0, h=0, name="M1"):
    return ex(d)["models"][name][layer][h]


def alt(d):
    return ex(d)["alternatives"][0]


def _set(obj, key, value):
    obj[key] = value


def _skew(row, j, by):
    row[j] += by


MALFORMED = {
    "no examples key": (lambda d: d.clear() or d.update({"x": 1}), "missing 'examples'"),
    "no examples": (lambda d: _set(d, "examples", []), "examples must be a non-empty list"),
    "unknown top-level key": (lambda d: _set(d, "title", "x"), "unknown key 'title'"),
    "example without tokens": (lambda d: ex(d).pop("tokens"), "missing 'tokens'"),
    "misspelt example key": (lambda d: _set(ex(d), "alternative", []), "unknown key 'alternative'"),
    "duplicate id": (lambda d: _set(ex(d, 1), "id", "ex-a"), "used twice"),
    "token not a string": (lambda d: _set(ex(d)["tokens"], 1, 7), "tokens must be a non-empty list of strings"),
    "no models": (lambda d: _set(ex(d), "models", {}), "models must be a non-empty object"),
    "model without layers": (lambda d: _set(ex(d)["models"], "M2", []), "model 'M2': must be a non-empty list"),
    "layer without heads": (lambda d: _set(ex(d)["models"]["M1"], 1, []), "layer 1: has no heads"),
    "ragged heads": (lambda d: ex(d)["models"]["M1"][1].pop(), "has 1 heads, layer 0 has 2"),
    "missing row": (lambda d: head(d).pop(), "has 3 rows, not one per token (4)"),
    "short row": (lambda d: head(d, 1, 1)[2].pop(), "head 1: row 2 has 3 weights, not one per token (4)"),
    "row sum off": (lambda d: _skew(head(d, 0, 1)[2], 0, 0.01), "row 2 sums to 1.0100 over its visible keys 0..2"),
    "weight after query": (lambda d: _set(head(d)[1], 3, 0.2), "row 1, key 3: weight 0.2 right of the query"),
    "negative weight": (lambda d: _skew(head(d)[2], 0, -0.5), "row 2, key 0: weight -0.35 is negative"),
    "not a number": (lambda d: _set(head(d)[1], 0, float("nan")), "row 1, key 0: nan is not a finite number"),
    "boolean weight": (lambda d: _set(head(d)[0], 0, True), "row 0, key 0: True is not a finite number"),
    "alternative for unknown model": (lambda d: _set(alt(d), "model", "M9"), "unknown model 'M9'"),
    "alternative layer out of range": (lambda d: _set(alt(d), "layer", 2), "layer 2 is not one of 0..1"),
    "alternative head out of range": (lambda d: _set(alt(d), "head", -1), "head -1 is not one of 0..1"),
    "alternative weights off": (lambda d: _skew(alt(d)["weights"][3], 3, 0.1), "('adversarial') weights: row 3 sums"),
    "alternative named learned": (lambda d: _set(alt(d), "name", "learned"), "other than 'learned'"),
    "alternative without weights": (lambda d: alt(d).pop("weights"), "missing 'weights'"),
    "row neither list nor null": (lambda d: _set(head(d), 2, "x"), "row 2 has str weights, not one per token"),
    "all-null head": (lambda d: _set(ex(d)["models"]["M1"][1], 0, [None] * 4), "layer 1, head 0: every row is null"),
    "all-null alternative": (lambda d: _set(alt(d), "weights", [None] * 4), "weights: every row is null"),
}


def test_hand_made_data_is_valid():
    check_data(make_data())
    check_data(other_data())
    check_data(cross_data())


def test_null_rows_pass():
    data = make_data()
    head(data)[1] = None
    alt(data)["weights"][0] = None
    check_data(data)


def test_rows_within_tolerance_pass():
    data = make_data()
    for row in head(data):
        row[:] = [round(v, 3) for v in row]  # 1/3 rounds to 0.333: three of them sum to 0.999
    check_data(data)


@pytest.mark.parametrize("name", MALFORMED)
def test_check_data_rejects(name):
    break_it, message = MALFORMED[name]
    data = make_data()
    break_it(data)
    with pytest.raises(AttnlabError) as err:
        check_data(data)
    text = str(err.value)
    assert "\n" not in text
    assert message in text


def test_null_rows_do_not_excuse_the_others():
    data = cross_data()
    _skew(ex(data)["models"]["enc-dec"][1][1][5], 0, 0.2)
    with pytest.raises(AttnlabError, match=r"model 'enc-dec', layer 1, head 1: row 5 sums to 1.2000"):
        check_data(data)


def test_check_data_names_the_place():
    data = make_data()
    _skew(head(data, 1, 0, "M2")[3], 1, 0.2)
    with pytest.raises(AttnlabError, match=r"example 'ex-a', model 'M2', layer 1, head 0: row 3 sums"):
        check_data(data)


def test_a_diverged_model_is_left_out_of_the_drawing_and_named():
    """A model whose run diverged has its Diverged record in place of its maps: the viewer draws the others (an
    example with none left goes, and so does an alternative of that model) and names it once."""
    from attnlab.errors import diverged_record
    from attnlab.maps import drawable

    lost = diverged_record("L9", 3)
    d = make_data()
    d["examples"][0]["models"]["M1"] = lost
    d["examples"][1]["models"] = {"M1": lost, "M2": lost}
    shown, named = drawable(d)
    check_data(shown)
    assert named == [lost] and [ex["id"] for ex in shown["examples"]] == ["ex-a"]
    assert list(shown["examples"][0]["models"]) == ["M2"] and shown["examples"][0]["alternatives"] == []
    with pytest.raises(AttnlabError, match="model 'M1'"):
        check_data(d)  # undrawable as it is: what the page draws goes through drawable()
    assert drawable({"examples": [{**d["examples"][1], "id": "only"}]}) == ({"examples": []}, [lost])


def test_viewer_html_checks_first():
    data = make_data()
    ex(data)["models"]["M1"][0] = []
    with pytest.raises(AttnlabError, match="has no heads"):
        viewer_html(data)


@pytest.mark.parametrize("bad", ["", "1viewer", 'a"b', "a b", "x<y"])
def test_viewer_html_rejects_bad_element_id(bad):
    with pytest.raises(AttnlabError, match="element id"):
        viewer_html(make_data(), bad)


# --- the fragment --------------------------------------------------------------------------------------------

def embedded(fragment: str, element_id: str):
    found = re.search(rf'<script type="application/json" id="{element_id}-data">(.*?)</script>', fragment, re.S)
    assert found, "no embedded JSON"
    return json.loads(found.group(1))


ASSETS = REPO / "docs" / "assets"
VIEWER_JS, VIEWER_CSS = ASSETS / "attnlab-viewer.js", ASSETS / "attnlab-viewer.css"


def test_fragment_and_its_assets_load_nothing_from_outside():
    fragment = viewer_html(make_data())
    for text in (fragment, VIEWER_JS.read_text(), VIEWER_CSS.read_text()):
        assert "http://" not in text and "https://" not in text and "url(" not in text and "@import" not in text
    assert "<link" not in fragment and not re.search(r"<script[^>]*\bsrc\s*=", fragment, re.I)
    assert fragment.count("<script") == 1 and fragment.count("</script>") == 1  # the JSON closes nothing early
    assert 'type="application/json"' in fragment  # data only: the code is the site's asset


def test_the_site_loads_the_viewers_assets_on_every_page():
    site = yaml.safe_load((REPO / "mkdocs.yml").read_text())
    assert "assets/attnlab-viewer.js" in site["extra_javascript"]
    assert "assets/attnlab-viewer.css" in site["extra_css"]


def test_json_round_trips():
    data = make_data()
    assert embedded(viewer_html(data, "v1"), "v1") == data


def test_fragment_survives_markdown():
    """The site's pages are Markdown with raw HTML: the fragment must come through Python-Markdown intact."""
    markdown = pytest.importorskip("markdown")
    data = make_data()
    fragment = viewer_html(data, "v1")
    page = markdown.markdown(f"# Viewer\n\nSome text.\n\n{fragment}\nMore *text*.\n",
                             extensions=["admonition", "attr_list", "tables", "toc"])
    assert embedded(page, "v1") == data
    assert fragment.strip() in page


def test_viewers_are_scoped_by_element_id():
    one, two = viewer_html(make_data(), "v1"), viewer_html(other_data(), "v2")
    ids_one, ids_two = set(re.findall(r'\bid="([^"]+)"', one)), set(re.findall(r'\bid="([^"]+)"', two))
    assert ids_one and all(i == "v1" or i.startswith("v1-") for i in ids_one)
    assert not ids_one & ids_two
    css = re.sub(r"/\*.*?\*/", "", VIEWER_CSS.read_text(), flags=re.S)
    selectors = [sel.strip() for rule in re.findall(r"([^{}]+)\{", css) for sel in rule.split(",")]
    assert selectors and all(sel.startswith(".attnlab-viewer ") or sel == ".attnlab-viewer" for sel in selectors)


# --- in the browser ------------------------------------------------------------------------------------------

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>viewer test</title><link rel="stylesheet" href="{css}"></head>
<body style="margin: 0; background: #fff; font-family: Roboto, 'Helvetica Neue', Arial, sans-serif; font-size: 16px">
<article class="md-typeset" style="max-width: 780px; margin: 24px auto; padding: 0 16px">
<h1>Attention viewer</h1>
{body}
</article>
<script src="{js}"></script></body></html>
"""


def page_html(body: str) -> str:
    """A page as the site makes one: the fragment in an article, the viewer's assets linked (file URLs)."""
    return PAGE.format(body=body, css=VIEWER_CSS.as_uri(), js=VIEWER_JS.as_uri())


@pytest.fixture(scope="module")
def browser():
    sync_api = playwright_or_skip()
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM))
        yield b
        b.close()


@pytest.fixture(scope="module")
def page_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("viewer") / "viewer.html"
    one, two = viewer_html(make_data(), "v1"), viewer_html(other_data(), "v2")
    body = f"{one}<p>A second viewer on the same page.</p>\n{two}"
    path.write_text(page_html(body), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def cross_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("viewer") / "cross.html"
    path.write_text(page_html(viewer_html(cross_data(), "v1")), encoding="utf-8")  # v1: the helpers' default
    return path


def open_page(browser, path):
    pg = browser.new_page(viewport={"width": 1280, "height": 900})
    errors = []
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(path.as_uri())
    yield pg
    pg.close()
    assert errors == [], f"console errors: {errors}"


@pytest.fixture
def page(browser, page_file):
    yield from open_page(browser, page_file)


@pytest.fixture
def cross_page(browser, cross_file):
    yield from open_page(browser, cross_file)


def state(pg, vid="v1") -> dict:
    return json.loads(pg.get_attribute(f"#{vid}", "data-state"))


def token(pg, j, vid="v1"):
    return pg.locator(f"#{vid}-tokens .av-token").nth(j)


def shown_weight(pg, j, vid="v1") -> float:
    return float(token(pg, j, vid).locator(".av-weight").inner_text())


def shade(pg, j, vid="v1") -> float:
    """The alpha of a token's background colour."""
    color = token(pg, j, vid).evaluate("b => getComputedStyle(b).backgroundColor")
    parts = re.findall(r"[\d.]+", color)
    return float(parts[3]) if len(parts) == 4 else 1.0


def shows(value: float):
    """What a token's label (two decimals) must read for a weight, ties either way."""
    return pytest.approx(value, abs=0.005 + 1e-9)


def mean_of_heads(layers, layer, i, j) -> float:
    heads = layers[layer]
    return sum(h[i][j] for h in heads) / len(heads)


def test_defaults(page):
    data = make_data()
    assert state(page) == {"example": "ex-a", "model": "M1", "layer": 1, "head": "mean", "query": 3,
                           "pinned": False, "weights": "learned"}
    assert page.locator("#v1-tokens .av-token").all_inner_texts()[0].startswith("the")
    assert page.locator("#v1-tokens .av-token").count() == 4
    assert shown_weight(page, 0) == shows(mean_of_heads(ex(data)["models"]["M1"], 1, 3, 0))
    assert page.locator("#v1-example option").first.inner_text() == NASTY  # shown as text, not markup
    assert page.get_by_label("Head").first.input_value() == "mean"


def test_clicking_a_token_selects_and_pins_it(page):
    layers = ex(make_data())["models"]["M1"]
    before, expected = shown_weight(page, 1), mean_of_heads(layers, 1, 2, 1)
    assert abs(before - expected) > 0.05  # so the check below sees a change
    token(page, 2).click()
    assert state(page)["query"] == 2 and state(page)["pinned"] is True
    assert shown_weight(page, 1) == shows(expected)
    assert shade(page, 1) == pytest.approx(expected, abs=0.01)
    assert token(page, 3).locator(".av-weight").inner_text() == "\u00b7"  # after the query: not visible
    token(page, 0).hover()
    assert state(page)["query"] == 2  # pinned: hovering does not move it
    token(page, 2).click()
    assert state(page)["pinned"] is False
    token(page, 1).hover()
    assert state(page)["query"] == 1


def test_keyboard_moves_the_query(page):
    token(page, 3).focus()
    page.keyboard.press("ArrowLeft")
    assert state(page)["query"] == 2
    page.keyboard.press("Enter")
    assert state(page)["pinned"] is True
    page.keyboard.press("ArrowLeft")
    assert (state(page)["query"], state(page)["pinned"]) == (1, True)


def test_mean_of_heads_and_one_head(page):
    layers = ex(make_data())["models"]["M1"]
    token(page, 2).click()
    mean, head0 = mean_of_heads(layers, 1, 2, 0), layers[1][0][2][0]
    assert abs(mean - head0) > 0.05
    assert shown_weight(page, 0) == shows(mean)
    page.select_option("#v1-head", "0")
    assert state(page)["head"] == 0
    assert shown_weight(page, 0) == shows(head0)
    page.select_option("#v1-head", "mean")
    assert state(page)["head"] == "mean"
    assert shown_weight(page, 0) == shows(mean)


def test_small_multiples(page):
    tiles = page.locator("#v1-grid .av-tile")
    pairs = {(t.get_attribute("data-layer"), t.get_attribute("data-head")) for t in tiles.all()}
    heads = {p for p in pairs if p[1] != "mean"}
    assert heads == {("0", "0"), ("0", "1"), ("1", "0"), ("1", "1")}  # layers x heads
    assert page.locator("#v1-grid .av-tile svg").count() == tiles.count()
    assert page.locator("#v1-grid .av-selected").get_attribute("data-head") == "mean"
    token(page, 1).click()
    rows = page.locator("#v1-grid .av-row")
    assert {r.get_attribute("y") for r in rows.all()} == {"1"}  # the query's row is outlined in every map
    page.click('#v1-grid .av-tile[data-layer="0"][data-head="1"]')
    assert (state(page)["layer"], state(page)["head"]) == (0, 1)
    assert page.locator("#v1-grid .av-selected").count() == 1


def test_alternative_toggle(page):
    data = make_data()
    learned, other = head(data, 0, 1)[2][1], alt(data)["weights"][2][1]
    assert abs(learned - other) > 0.05
    token(page, 2).click()
    assert page.is_visible("#v1-weights")
    page.locator("#v1-weights").get_by_label("adversarial").check()
    s = state(page)
    assert (s["weights"], s["model"], s["layer"], s["head"], s["query"]) == ("adversarial", "M1", 0, 1, 2)
    assert shown_weight(page, 1) == shows(other)
    assert alt(data)["note"] in page.inner_text("#v1-note")
    # the note names the head as the menus do, counted from 1 (the data's layer 0, head 1)
    menus = [page.locator(f"#v1-{k} option:checked").inner_text() for k in ("model", "layer", "head")]
    assert menus == ["M1", "layer 1", "head 2"]
    assert ", ".join(menus) in page.inner_text("#v1-note") and "layer 0" not in page.inner_text("#v1-note")
    page.locator("#v1-weights").get_by_label("learned").check()
    assert state(page)["weights"] == "learned"
    assert shown_weight(page, 1) == shows(learned)


def test_switching_example(page):
    page.select_option("#v1-example", "1")
    s = state(page)
    assert (s["example"], s["query"], s["weights"]) == ("ex-b", 2, "learned")
    assert page.locator("#v1-tokens .av-token").count() == 3
    assert not page.is_visible("#v1-weights")  # no alternatives for this sentence
    page.select_option("#v1-model", "M2")
    assert state(page)["model"] == "M2"
    m2 = ex(make_data(), 1)["models"]["M2"]
    assert shown_weight(page, 2) == shows(mean_of_heads(m2, 1, 2, 2))


def test_viewers_do_not_clash(page):
    before = state(page, "v2")
    assert before == {"example": "solo", "model": "X", "layer": 0, "head": "mean", "query": 2, "pinned": False,
                      "weights": "learned"}
    token(page, 0).click()
    page.select_option("#v1-head", "1")
    assert state(page, "v2") == before
    token(page, 1, "v2").click()
    assert state(page, "v2")["query"] == 1 and state(page)["query"] == 0
    assert not page.is_visible("#v2-weights")


def test_screenshot(page):
    token(page, 1).click()
    page.screenshot(path=str(SCREENSHOT), full_page=True)
    assert SCREENSHOT.stat().st_size > 0


# --- cross-attention: null rows ------------------------------------------------------------------------------

def enc_dec(layer, h):
    return ex(cross_data())["models"]["enc-dec"][layer][h]


def mean_of_attending(layer, i, j) -> float:
    rows = [h[i] for h in ex(cross_data())["models"]["enc-dec"][layer] if h[i] is not None]
    return sum(r[j] for r in rows) / len(rows)


def status(pg) -> str:
    return pg.inner_text("#v1-status")


def neutral(pg) -> bool:
    """No token shaded and every weight label a dot: the query does not attend."""
    tokens = pg.locator("#v1-tokens .av-token")
    backgrounds = tokens.evaluate_all("bs => bs.map(b => getComputedStyle(b).backgroundColor)")
    labels = tokens.locator(".av-weight").all_inner_texts()
    return set(backgrounds) == {"rgb(255, 255, 255)"} and set(labels) == {"\u00b7"}


def test_cross_opens_on_the_last_attending_token(cross_page):
    assert state(cross_page) == {"example": "cross", "model": "enc-dec", "layer": 1, "head": "mean", "query": 5,
                                 "pinned": False, "weights": "learned"}
    assert "does not attend" not in status(cross_page)
    for j in range(len(SOURCE)):
        assert shown_weight(cross_page, j) == shows(mean_of_attending(1, 5, j))
    assert not neutral(cross_page)


@pytest.mark.parametrize("j", [1, 6])  # a source token; the last target token
def test_cross_token_that_does_not_attend(cross_page, j):
    token(cross_page, j).click()
    assert (state(cross_page)["query"], state(cross_page)["pinned"]) == (j, True)
    word = CROSS_TOKENS[j]
    assert f"Query: \u201c{word}\u201d (token {j}) does not attend" in status(cross_page)
    assert "click it again to unpin" in status(cross_page)
    assert neutral(cross_page)
    assert "does not attend" in token(cross_page, 0).get_attribute("title")


def test_cross_decoder_token_shows_its_row(cross_page):
    token(cross_page, 1).click()
    token(cross_page, 3).click()  # <sep>: the first decoder step
    assert state(cross_page)["query"] == 3
    assert "does not attend" not in status(cross_page)
    for j in range(len(SOURCE)):
        expected = mean_of_attending(1, 3, j)
        assert shown_weight(cross_page, j) == shows(expected)
        assert shade(cross_page, j) == pytest.approx(expected, abs=0.01)
    assert shown_weight(cross_page, 3) == 0
    assert token(cross_page, 4).locator(".av-weight").inner_text() == "\u00b7"  # after the query
    cross_page.locator("#v1-weights").get_by_label("uniform").check()
    assert shown_weight(cross_page, 0) == shows(1 / 3)


def test_cross_mean_skips_heads_that_do_not_attend(cross_page):
    cross_page.select_option("#v1-layer", "0")
    token(cross_page, 4).click()  # head 1 of layer 0 skips step 4: the mean is head 0's row
    for j in range(len(SOURCE)):
        assert shown_weight(cross_page, j) == shows(enc_dec(0, 0)[4][j])
    cross_page.select_option("#v1-head", "1")
    assert neutral(cross_page) and "does not attend" in status(cross_page)
    cross_page.select_option("#v1-head", "0")
    assert shown_weight(cross_page, 1) == shows(enc_dec(0, 0)[4][1])


def test_cross_keyboard_and_hover_reach_null_rows(cross_page):
    token(cross_page, 5).focus()
    cross_page.keyboard.press("ArrowLeft")
    cross_page.keyboard.press("ArrowLeft")
    assert state(cross_page)["query"] == 3 and not neutral(cross_page)
    cross_page.keyboard.press("ArrowLeft")
    assert state(cross_page)["query"] == 2 and neutral(cross_page)
    assert "does not attend" in status(cross_page)
    token(cross_page, 4).hover()
    assert state(cross_page)["query"] == 4 and not neutral(cross_page)
    token(cross_page, 0).hover()
    assert state(cross_page)["query"] == 0 and neutral(cross_page)


def test_cross_grid_greys_null_rows(cross_page):
    assert cross_page.locator("#v1-grid .av-tile svg").count() == 6  # 2 layers x (2 heads + mean)

    def grey_rows(layer, h):
        rects = cross_page.locator(f'#v1-grid .av-tile[data-layer="{layer}"][data-head="{h}"] rect.av-masked')
        return {int(r.get_attribute("y")) for r in rects.all()}

    assert grey_rows(0, 1) == {0, 1, 2, 4, 6}
    assert grey_rows(0, "mean") == grey_rows(1, 0) == {0, 1, 2, 6}  # the mean attends where any head does
    fill = cross_page.locator("#v1-grid rect.av-masked").first.evaluate("r => getComputedStyle(r).fill")
    assert fill == "rgb(238, 238, 238)"


def test_cross_screenshot(cross_page):
    cross_page.screenshot(path=str(CROSS_SCREENSHOT), full_page=True)
    assert CROSS_SCREENSHOT.stat().st_size > 0


@pytest.mark.parametrize("names", [[["A", "B"], ["C", "D"]], [["A", "B"], ["A", "C", "B"]], [["A"], ["B"]]])
def test_s11_counts_the_models_as_the_page_does(names):
    """'models: 2' sat beside prose counting four: S11 now counts the models in all and the most on one sentence,
    from the same examples the page's sentence counts, so the two agree whatever the data."""
    from pathlib import Path

    from attnlab.claims.evaluate import evaluate
    from attnlab.claims.registry import load_registry
    from attnlab.experiments.viewer.page import contents
    from attnlab.results import Results

    examples = [{"models": {n: [[[[1.0]]]] for n in ns}} for ns in names]  # layer, head, query, key
    s11 = next(c for c in load_registry().claims if c.id == "S11")
    v = evaluate(s11, Results(root=Path("."), files={"viewer": {"examples": examples}}))
    in_all, most = len({n for ns in names for n in ns}), max(map(len, names))
    assert v.reproduced["models_in_all"] == in_all and v.reproduced["models_on_one_sentence"] == most
    said = contents(examples)
    assert f"{in_all} models in all" in said and (f"{most} of them on each" in said or f"to {most} of them" in said)
    # the counts are shown, not tested (data that exist pass any count); the rows' sums are what holds or fails
    assert {p.outcome for name, p in v.parts.items() if name != "rows_are_distributions"} == {"descriptive"}
    assert v.verdict == "holds" and v.parts["rows_are_distributions"].outcome == "holds"


def test_the_producer_records_the_maps_and_imports_nothing_of_the_report():
    """experiments/viewer/producer.py checks its data against the format (attnlab.maps) and leaves the drawing to
    the page: nothing it imports, directly or not, is the report's."""
    from attnlab import imports

    assert "attnlab.maps" in imports.closure("attnlab.experiments.viewer.producer")
    assert not {m for m in imports.closure("attnlab.experiments.viewer.producer") if m.startswith("attnlab.report")}
    assert imports.closure("attnlab.maps") == {"attnlab", "attnlab.errors", "attnlab.maps"}


@pytest.mark.parametrize("asset", ["attnlab-viewer.js", "attnlab-viewer.css"])
def test_a_docs_folder_without_the_viewers_assets_stops_the_build_naming_it(tmp_path, asset):
    import shutil

    from attnlab.report.build import nav

    docs = tmp_path / "docs"
    shutil.copytree(REPO / "docs", docs)
    assert nav(docs)
    (docs / "assets" / asset).unlink()
    with pytest.raises(AttnlabError, match=f"site asset missing: .*assets/{asset}"):
        nav(docs)
