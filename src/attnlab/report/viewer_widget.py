"""S11: an interactive attention viewer, as one self-contained HTML fragment for a site page.

`viewer_html(data)` returns a <div> (with the data as embedded JSON), a <style> and an inline <script>:
vanilla JavaScript, no library, no URL, so the page works from the built site opened from disk. Every id,
selector and radio-group name is prefixed with the element id, so several viewers can share a page.

The data (checked by `check_data`):

    {"examples": [
       {"id": "winograd-tired", "label": "Winograd: ... too tired ...", "tokens": ["the", "animal", ...],
        "models": {"E8 one block": [           # one entry per layer
                       [head0, head1, ...]]},  # each head: T x T, row i = query i over keys 0..T-1 (causal)
        "alternatives": [                      # optional: other weights for one model/layer/head
           {"name": "adversarial", "model": "E8 one block", "layer": 0, "head": 0, "weights": T x T,
            "note": "JS divergence 0.41 from the learned weights; ..."}]},   # note optional
       ...]}

Every layer of a model has the same number of heads. Weights are plain lists of numbers; round them
(4 decimals is plenty) to keep the page small.

A row may be null (None): that token does not attend in that head, e.g. cross-attention over tokens
[source..., SEP, target...], where only SEP and the target tokens but the last have rows (over the source).
Each head needs one row that is not null; "mean of heads" averages a query's rows in the heads that have one.
"""
from __future__ import annotations

import json
import math
import re

from attnlab.errors import AttnlabError, is_diverged

TOL = 1e-3  # how far a row's visible sum may stray from 1, and the largest weight allowed right of the query
ID_RE = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
EXAMPLE_KEYS = {"id", "label", "tokens", "models"}
ALTERNATIVE_KEYS = {"name", "model", "layer", "head", "weights"}


def _fail(where: str, problem: str):
    raise AttnlabError(f"viewer data: {where}: {problem}")


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _is_index(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_keys(obj, required: set, optional: set, where: str):
    if not isinstance(obj, dict):
        _fail(where, f"must be an object, not {type(obj).__name__}")
    missing = sorted(required - set(obj))
    if missing:
        _fail(where, f"missing {', '.join(map(repr, missing))}")
    unknown = sorted(set(obj) - required - optional, key=str)
    if unknown:
        _fail(where, f"unknown key {unknown[0]!r} (allowed: {', '.join(sorted(required | optional))})")


def _check_row(row, i: int, n: int, where: str):
    if not isinstance(row, list) or len(row) != n:
        got = len(row) if isinstance(row, list) else type(row).__name__
        _fail(where, f"row {i} has {got} weights, not one per token ({n})")
    for j, v in enumerate(row):
        if not _is_number(v):
            _fail(where, f"row {i}, key {j}: {v!r} is not a finite number")
        if v < -TOL:
            _fail(where, f"row {i}, key {j}: weight {v:g} is negative")
        if j > i and v > TOL:
            _fail(where, f"row {i}, key {j}: weight {v:g} right of the query (attention is causal; expected 0)")
    total = sum(row[:i + 1])
    if abs(total - 1) > TOL:
        _fail(where, f"row {i} sums to {total:.4f} over its visible keys 0..{i}, not 1 (within {TOL:g})")


def _check_weights(weights, n: int, where: str):
    """A T x T causal attention map: one row per query, each summing to 1 over keys 0..i, or null."""
    if not isinstance(weights, list) or len(weights) != n:
        got = len(weights) if isinstance(weights, list) else type(weights).__name__
        _fail(where, f"has {got} rows, not one per token ({n})")
    if all(row is None for row in weights):
        _fail(where, "every row is null (no token attends; at least one row needs weights)")
    for i, row in enumerate(weights):
        if row is not None:
            _check_row(row, i, n, where)


def _check_model(name, layers, n: int, where: str):
    where = f"{where}, model {name!r}"
    if not isinstance(layers, list) or not layers:
        _fail(where, "must be a non-empty list of layers")
    for l, heads in enumerate(layers):
        if not isinstance(heads, list) or not heads:
            _fail(f"{where}, layer {l}", "has no heads (expected a non-empty list of T x T maps)")
        if len(heads) != len(layers[0]):
            _fail(f"{where}, layer {l}", f"has {len(heads)} heads, layer 0 has {len(layers[0])}")
        for h, weights in enumerate(heads):
            _check_weights(weights, n, f"{where}, layer {l}, head {h}")


def _check_alternative(alt, k: int, models: dict, n: int, where: str):
    where = f"{where}, alternative {k}"
    _check_keys(alt, ALTERNATIVE_KEYS, {"note"}, where)
    if not isinstance(alt["name"], str) or not alt["name"] or alt["name"] == "learned":
        _fail(where, f"name {alt['name']!r} must be a non-empty string other than 'learned'")
    if alt["model"] not in models:
        _fail(where, f"unknown model {alt['model']!r} (the example has {', '.join(map(repr, models))})")
    layers = models[alt["model"]]
    if not _is_index(alt["layer"]) or not 0 <= alt["layer"] < len(layers):
        _fail(where, f"layer {alt['layer']!r} is not one of 0..{len(layers) - 1}")
    heads = layers[alt["layer"]]
    if not _is_index(alt["head"]) or not 0 <= alt["head"] < len(heads):
        _fail(where, f"head {alt['head']!r} is not one of 0..{len(heads) - 1}")
    if not isinstance(alt.get("note", ""), str):
        _fail(where, "note must be a string")
    _check_weights(alt["weights"], n, f"{where} ({alt['name']!r}) weights")


def _check_example(ex, k: int):
    where = f"example {k}"
    _check_keys(ex, EXAMPLE_KEYS, {"alternatives"}, where)
    if not isinstance(ex["id"], str) or not ex["id"]:
        _fail(where, f"id {ex['id']!r} must be a non-empty string")
    where = f"example {ex['id']!r}"
    if not isinstance(ex["label"], str):
        _fail(where, "label must be a string")
    tokens = ex["tokens"]
    if not isinstance(tokens, list) or not tokens or not all(isinstance(t, str) for t in tokens):
        _fail(where, "tokens must be a non-empty list of strings")
    models = ex["models"]
    if not isinstance(models, dict) or not models:
        _fail(where, "models must be a non-empty object {model name: layers}")
    for name, layers in models.items():
        _check_model(name, layers, len(tokens), where)
    alternatives = ex.get("alternatives", [])
    if not isinstance(alternatives, list):
        _fail(where, "alternatives must be a list")
    for i, alt in enumerate(alternatives):
        _check_alternative(alt, i, models, len(tokens), where)
    names = [alt["name"] for alt in alternatives]
    if len(set(names)) != len(names):
        _fail(where, "two alternatives share a name")


def check_data(data) -> None:
    """Raise AttnlabError (one line naming the place and the problem) unless `data` is viewer data."""
    _check_keys(data, {"examples"}, set(), "data")
    examples = data["examples"]
    if not isinstance(examples, list) or not examples:
        _fail("data", "examples must be a non-empty list")
    seen = set()
    for k, ex in enumerate(examples):
        _check_example(ex, k)
        if ex["id"] in seen:
            _fail(f"example {k}", f"id {ex['id']!r} is used twice")
        seen.add(ex["id"])


def drawable(data: dict) -> tuple[dict, list[dict]]:
    """The viewer's data without the models whose run diverged (their Diverged records, attnlab.errors, stand in
    for their maps; an example left with no model goes too), and those records, each once."""
    examples, lost = [], {}
    for ex in data["examples"]:
        models = {name: layers for name, layers in ex["models"].items() if not is_diverged(layers)}
        lost |= {layers["run"]: layers for layers in ex["models"].values() if is_diverged(layers)}
        if models:
            alternatives = [a for a in ex.get("alternatives", []) if a["model"] in models]
            examples.append({**ex, "models": models, **({"alternatives": alternatives} if "alternatives" in ex else {})})
    return {"examples": examples}, list(lost.values())


def _embedded_json(data: dict) -> str:
    # ASCII only, and no <, > or & at all: the JSON can neither close its <script> nor open a comment
    text = json.dumps(data, ensure_ascii=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def viewer_html(data: dict, element_id: str = "attnlab-viewer") -> str:
    """The viewer as one HTML fragment (div, style, script) for a Markdown page; checks the data first."""
    check_data(data)
    if not isinstance(element_id, str) or not ID_RE.fullmatch(element_id):
        raise AttnlabError(f"viewer element id {element_id!r} must be a letter then letters, digits, - or _")
    page = (SKELETON + "<style>\n" + CSS + "</style>\n<script>\n" + JS + "</script>\n").replace("__ID__", element_id)
    return page.replace("__DATA__", _embedded_json(data), 1)


# No blank lines anywhere below: Markdown would end the raw HTML block there.
SKELETON = """\
<div id="__ID__" class="attnlab-viewer" data-state="">
<div class="av-controls">
<div class="av-control"><label for="__ID__-example">Sentence</label><select id="__ID__-example"></select></div>
<div class="av-control"><label for="__ID__-model">Model</label><select id="__ID__-model"></select></div>
<div class="av-control"><label for="__ID__-layer">Layer</label><select id="__ID__-layer"></select></div>
<div class="av-control"><label for="__ID__-head">Head</label><select id="__ID__-head"></select></div>
<fieldset class="av-control" id="__ID__-weights" hidden><legend>Weights</legend><div class="av-radios"></div></fieldset>
</div>
<div class="av-tokens" id="__ID__-tokens" role="group" aria-label="Tokens: hover or focus one to make it the query, click to pin it, arrow keys to move"></div>
<div class="av-status"><span class="av-scale" aria-hidden="true"><span>0</span><span class="av-ramp"></span><span>1</span></span><span id="__ID__-status"></span></div>
<div class="av-note" id="__ID__-note" hidden></div>
<div class="av-caption">All layers &times; heads: one map per head (rows: queries, columns: keys; grey: keys after the query, and queries that do not attend), the selected query&#8217;s row outlined. Click a map to show it above.</div>
<div class="av-grid" id="__ID__-grid" role="group" aria-label="All layers and heads"></div>
<noscript>The attention viewer needs JavaScript.</noscript>
<script type="application/json" id="__ID__-data">__DATA__</script>
</div>
"""

CSS = """\
#__ID__ { margin: 1em 0 1.5em; color: #222; }
#__ID__ [hidden] { display: none !important; }
#__ID__ .av-controls {
  display: flex; flex-wrap: wrap; gap: .6em 1.2em; align-items: flex-end; margin-bottom: .7em;
}
#__ID__ .av-control { display: flex; flex-direction: column; margin: 0; padding: 0; border: 0; min-width: 0; }
#__ID__ .av-control label, #__ID__ .av-control legend {
  font-size: .75em; font-weight: 600; color: #555; margin-bottom: .2em; padding: 0;
}
#__ID__ select {
  font: inherit; font-size: .85em; padding: .25em .4em; border: 1px solid #bbb; border-radius: 4px;
  background: #fff; color: #222; max-width: 24em;
}
#__ID__ .av-radios { display: flex; gap: .2em; font-size: .85em; }
#__ID__ .av-radios label {
  display: flex; align-items: center; gap: .3em; padding: .2em .6em; border: 1px solid #bbb;
  border-radius: 4px; cursor: pointer; font-size: 1em; font-weight: 400; color: #222; margin: 0;
}
#__ID__ .av-radios label:has(input:checked) { background: #fff3e0; border-color: #e65100; }
#__ID__ .av-tokens {
  display: flex; flex-wrap: wrap; gap: .4em .3em; padding: .6em; border: 1px solid #e0e0e0;
  border-radius: 6px; background: #fff;
}
#__ID__ .av-token {
  font: inherit; display: inline-flex; flex-direction: column; align-items: center; min-width: 2.8em;
  margin: 0; padding: .25em .45em .15em; border: 1px solid #c5cae9; border-radius: 4px; background: #fff;
  color: #222; cursor: pointer; white-space: pre; line-height: 1.25;
}
#__ID__ .av-token .av-weight { font-size: .68em; font-variant-numeric: tabular-nums; opacity: .85; }
#__ID__ .av-token.av-hidden { color: #9e9e9e; border-style: dashed; border-color: #ddd; }
#__ID__ .av-token.av-query { outline: 2px dashed #e65100; outline-offset: 1px; font-weight: 700; }
#__ID__ .av-token.av-pinned { outline-style: solid; }
#__ID__ .av-token:focus-visible { box-shadow: 0 0 0 4px #ffcc80; }
#__ID__ .av-status {
  display: flex; gap: .8em; align-items: center; font-size: .78em; color: #555; margin: .5em 0;
}
#__ID__ .av-scale { display: inline-flex; align-items: center; gap: .3em; flex: none; }
#__ID__ .av-ramp {
  display: inline-block; width: 5em; height: .8em; border: 1px solid #ccc;
  background: linear-gradient(to right, rgba(48, 63, 159, 0), rgb(48, 63, 159));
}
#__ID__ .av-note {
  font-size: .78em; color: #444; margin: .4em 0; padding: .3em .6em; border-left: 3px solid #c5cae9;
  background: #f5f6fb;
}
#__ID__ .av-note.av-alt { border-left-color: #ffb300; background: #fff8e1; }
#__ID__ .av-caption { font-size: .78em; color: #555; margin: 1em 0 .3em; }
#__ID__ .av-grid { overflow-x: auto; padding-bottom: .4em; }
#__ID__ .av-grid-row { display: flex; gap: .5em; align-items: flex-end; width: max-content; margin: .2em 0; }
#__ID__ .av-grid-label { width: 3.8em; align-self: center; font-size: .75em; color: #555; }
#__ID__ .av-tile {
  font: inherit; font-size: .7em; display: flex; flex-direction: column; align-items: center; gap: .15em;
  margin: 0; padding: 3px; border: 2px solid transparent; border-radius: 4px; background: none; color: #555;
  cursor: pointer;
}
#__ID__ .av-tile:hover { border-color: #c5cae9; }
#__ID__ .av-tile.av-selected { border-color: #e65100; color: #222; font-weight: 600; }
#__ID__ .av-tile.av-alt svg { outline: 2px solid #ffb300; }
#__ID__ .av-tile svg { display: block; border: 1px solid #ccc; background: #fff; }
#__ID__ .av-masked { fill: #eeeeee; }
"""

JS = """\
(function (rootId) {
  "use strict";
  var COLOR = "48, 63, 159";
  var root = document.getElementById(rootId);
  var data = JSON.parse(document.getElementById(rootId + "-data").textContent);
  var ui = {};
  ["example", "model", "layer", "head", "weights", "tokens", "status", "note", "grid"].forEach(function (k) {
    ui[k] = document.getElementById(rootId + "-" + k);
  });
  // layer Infinity: the first fit picks the last layer
  var S = {ex: 0, model: null, layer: Infinity, head: "mean", query: 0, pinned: false, alt: -1};
  var drawn = {};
  function each(list, fn) { Array.prototype.forEach.call(list, fn); }
  function example() { return data.examples[S.ex]; }
  function size() { return example().tokens.length; }
  function layers() { return example().models[S.model]; }
  function alternatives() { return example().alternatives || []; }
  function activeAlt() { return S.alt >= 0 ? alternatives()[S.alt] : null; }
  function isAltHead(layer, head) {
    var a = activeAlt();
    return !!a && a.model === S.model && a.layer === layer && a.head === head;
  }
  function headWeights(layer, head) {
    return isAltHead(layer, head) ? activeAlt().weights : layers()[layer][head];
  }
  // a query's mean row averages the heads where it attends (row not null); null if it attends in none
  function meanWeights(layer) {
    var n = layers()[layer].length, T = size(), out = [];
    for (var i = 0; i < T; i++) {
      var rows = [];
      for (var h = 0; h < n; h++) if (headWeights(layer, h)[i]) rows.push(headWeights(layer, h)[i]);
      out.push(rows.length ? [] : null);
      for (var j = 0; j < T && rows.length; j++) {
        var s = 0;
        for (var k = 0; k < rows.length; k++) s += rows[k][j];
        out[i].push(s / rows.length);
      }
    }
    return out;
  }
  function weightsOf(layer, head) { return head === "mean" ? meanWeights(layer) : headWeights(layer, head); }
  function queryRow() { return weightsOf(S.layer, S.head)[S.query]; }  // null: the query does not attend here
  function shown(t) { return t.replace(/\\n/g, "\\u21b5").replace(/\\t/g, "\\u21e5") || "\\u2205"; }
  function quote(t) { return "\\u201c" + shown(t) + "\\u201d"; }
  function esc(s) {
    return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  }
  // counted from 1, as the menus and the grid name them (the data counts from 0)
  function place(a) { return a.model + ", layer " + (a.layer + 1) + ", head " + (a.head + 1); }
  // state changes
  function fitLayerHead() {
    var ls = layers();
    if (!(S.layer < ls.length)) S.layer = ls.length - 1;
    if (S.head !== "mean" && !(S.head < ls[S.layer].length)) S.head = "mean";
  }
  function chooseExample(i) {
    S.ex = i;
    var models = Object.keys(example().models);
    if (models.indexOf(S.model) < 0) S.model = models[0];
    S.alt = -1; S.pinned = false;
    fitLayerHead();
    // open on the last token that attends in the map shown (check_data guarantees one)
    var w = weightsOf(S.layer, S.head);
    S.query = size() - 1;
    while (S.query > 0 && !w[S.query]) S.query--;
  }
  function chooseAlt(k) {
    S.alt = k;
    var a = activeAlt();
    if (a) { S.model = a.model; S.layer = a.layer; S.head = a.head; }
  }
  // an alternative stands for its own model/layer/head only; leaving that head goes back to learned
  function dropStaleAlt() {
    var a = activeAlt();
    if (a && !(a.model === S.model && a.layer === S.layer && a.head === S.head)) S.alt = -1;
  }
  // controls
  function fillSelect(select, pairs) {
    select.textContent = "";
    pairs.forEach(function (p) {
      var o = document.createElement("option");
      o.value = String(p[0]); o.textContent = p[1];
      select.appendChild(o);
    });
  }
  function fillOptions() {
    fillSelect(ui.model, Object.keys(example().models).map(function (m) { return [m, m]; }));
    fillSelect(ui.layer, layers().map(function (_, l) { return [l, "layer " + (l + 1)]; }));
    var heads = layers()[0].map(function (_, h) { return [h, "head " + (h + 1)]; });
    fillSelect(ui.head, [["mean", "mean of heads"]].concat(heads));
  }
  function fillWeights() {
    var box = ui.weights.querySelector(".av-radios"), alts = alternatives();
    ui.weights.hidden = alts.length === 0;
    box.textContent = "";
    [{name: "learned"}].concat(alts).forEach(function (a, k) {
      var label = document.createElement("label"), input = document.createElement("input");
      input.type = "radio"; input.name = rootId + "-weights"; input.value = String(k - 1);
      label.appendChild(input);
      label.appendChild(document.createTextNode(a.name));
      if (a.model !== undefined) label.title = place(a);
      box.appendChild(label);
    });
  }
  function syncControls() {
    ui.example.value = String(S.ex);
    ui.model.value = S.model;
    ui.layer.value = String(S.layer);
    ui.head.value = String(S.head);
    each(ui.weights.querySelectorAll("input"), function (r) { r.checked = +r.value === S.alt; });
  }
  // the sentence
  function drawTokens() {
    ui.tokens.textContent = "";
    example().tokens.forEach(function (t, j) {
      var b = document.createElement("button"), text = document.createElement("span");
      var w = document.createElement("span");
      b.type = "button"; b.className = "av-token"; b.setAttribute("data-index", j);
      text.className = "av-text"; text.textContent = shown(t);
      w.className = "av-weight";
      b.appendChild(text); b.appendChild(w);
      ui.tokens.appendChild(b);
    });
  }
  function paintTokens() {
    var toks = example().tokens, row = queryRow();
    each(ui.tokens.children, function (b, j) {
      var hidden = !!row && j > S.query, blank = !row || hidden, w = blank ? 0 : row[j], mine = j === S.query;
      var what = !row ? "the query does not attend here" : hidden ? "not visible from the query"
                                                                 : "weight " + w.toFixed(3);
      b.style.backgroundColor = blank ? "" : "rgba(" + COLOR + ", " + w.toFixed(3) + ")";
      b.style.color = w > 0.6 ? "#fff" : "";
      b.classList.toggle("av-query", mine);
      b.classList.toggle("av-pinned", mine && S.pinned);
      b.classList.toggle("av-hidden", hidden);
      b.setAttribute("aria-pressed", String(mine && S.pinned));
      b.lastChild.textContent = blank ? "\\u00b7" : w.toFixed(2);
      b.title = quote(toks[S.query]) + " \\u2192 " + quote(toks[j]) + ": " + what;
      b.setAttribute("aria-label", "token " + j + " " + quote(toks[j]) + ", " + what);
    });
  }
  function writeStatus() {
    var query = "Query: " + quote(example().tokens[S.query]) + " (token " + S.query + ")";
    if (!queryRow()) {
      ui.status.textContent = query + " does not attend in this model, layer and head (e.g. it is not a " +
        "decoder step): choose another token" + (S.pinned ? ", or click it again to unpin." : ".");
      return;
    }
    ui.status.textContent = query + ", " +
      (S.pinned ? "pinned: click it again to unpin."
                : "hover, focus or click a token to choose it; a click pins it.") +
      " Shade and number: its attention weight on each token.";
  }
  function writeNote() {
    var a = activeAlt(), alts = alternatives();
    ui.note.classList.toggle("av-alt", !!a);
    if (a) ui.note.textContent = "Showing \\u201c" + a.name + "\\u201d weights for " + place(a) +
      (a.note ? ": " + a.note : ".");
    else if (alts.length) ui.note.textContent = "Other weights for this sentence, under Weights: " +
      alts.map(function (x) { return x.name + " (" + place(x) + ")"; }).join("; ") + ".";
    else ui.note.textContent = "";
    ui.note.hidden = !ui.note.textContent;
  }
  // small multiples
  function cellSize(T) { return Math.max(3, Math.min(16, Math.floor(100 / T))); }
  function heatmap(w, T) {
    var px = T * cellSize(T), mask = "M1 0H" + T + "V" + (T - 1), grey = "", cells = "";
    for (var k = T - 1; k >= 1; k--) mask += "H" + k + "V" + (k - 1);
    for (var i = 0; i < T; i++) {
      if (!w[i]) grey += '<rect class="av-masked" x="0" y="' + i + '" width="' + T + '" height="1"/>';
      for (var j = 0; j <= i && w[i]; j++) {
        if (w[i][j] < 0.005) continue;  // white anyway; fewer nodes
        cells += '<rect x="' + j + '" y="' + i + '" width="1" height="1" fill-opacity="' +
          w[i][j].toFixed(3) + '"/>';
      }
    }
    return '<svg width="' + px + '" height="' + px + '" viewBox="0 0 ' + T + " " + T +
      '" shape-rendering="crispEdges" aria-hidden="true"><path class="av-masked" d="' + mask + 'Z"/>' + grey +
      '<g fill="rgb(' + COLOR + ')">' + cells + '</g><rect class="av-row" x="0" y="0" width="' + T +
      '" height="1" fill="none" stroke="#e65100" stroke-width="2" vector-effect="non-scaling-stroke"/></svg>';
  }
  function tile(layer, head) {
    var name = head === "mean" ? "mean" : "head " + (head + 1), alt = head !== "mean" && isAltHead(layer, head);
    var where = "layer " + (layer + 1) + ", " + name;
    return '<button type="button" class="av-tile' + (alt ? " av-alt" : "") + '" data-layer="' + layer +
      '" data-head="' + head + '" aria-label="show ' + where + '" title="' + where + '"><span>' + name +
      (alt ? " \\u00b7 " + esc(activeAlt().name) : "") + "</span>" +
      heatmap(weightsOf(layer, head), size()) + "</button>";
  }
  function drawGrid() {
    var html = "";
    layers().forEach(function (heads, l) {
      html += '<div class="av-grid-row"><span class="av-grid-label">layer ' + (l + 1) + "</span>";
      heads.forEach(function (_, h) { html += tile(l, h); });
      html += tile(l, "mean") + "</div>";
    });
    ui.grid.innerHTML = html;
  }
  function markGrid() {
    each(ui.grid.querySelectorAll(".av-tile"), function (b) {
      var on = +b.getAttribute("data-layer") === S.layer && b.getAttribute("data-head") === String(S.head);
      b.classList.toggle("av-selected", on);
      b.setAttribute("aria-pressed", String(on));
      b.querySelector(".av-row").setAttribute("y", S.query);
    });
  }
  // drawing: rebuild only what the state change invalidated, so focus stays where the reader left it
  function once(name, key, draw) {
    key = JSON.stringify(key);
    if (drawn[name] !== key) { draw(); drawn[name] = key; }
  }
  function writeState() {
    var a = activeAlt();
    root.setAttribute("data-state", JSON.stringify({example: example().id, model: S.model, layer: S.layer,
      head: S.head, query: S.query, pinned: S.pinned, weights: a ? a.name : "learned"}));
  }
  function refresh() { paintTokens(); markGrid(); writeStatus(); writeNote(); writeState(); }
  function rebuild() {
    once("options", [S.ex, S.model], fillOptions);
    once("tokens", S.ex, function () { drawTokens(); fillWeights(); });
    once("grid", [S.ex, S.model, S.alt], drawGrid);
    syncControls();
    refresh();
  }
  // events
  function tokenIndex(ev) {
    var b = ev.target.closest(".av-token");
    return b && ui.tokens.contains(b) ? +b.getAttribute("data-index") : -1;
  }
  function hover(ev) {
    var j = tokenIndex(ev);
    if (j >= 0 && !S.pinned && j !== S.query) { S.query = j; refresh(); }
  }
  ui.tokens.addEventListener("mouseover", hover);
  ui.tokens.addEventListener("focusin", hover);
  ui.tokens.addEventListener("click", function (ev) {
    var j = tokenIndex(ev);
    if (j < 0) return;
    S.pinned = !(S.pinned && S.query === j);
    S.query = j;
    refresh();
  });
  ui.tokens.addEventListener("keydown", function (ev) {
    var j = tokenIndex(ev), step = {ArrowLeft: -1, ArrowRight: 1}[ev.key];
    if (j < 0 || !step) return;
    ev.preventDefault();
    S.query = Math.max(0, Math.min(size() - 1, j + step));
    refresh();
    ui.tokens.children[S.query].focus();
  });
  ui.example.addEventListener("change", function () { chooseExample(+ui.example.value); rebuild(); });
  ui.model.addEventListener("change", function () {
    S.model = ui.model.value;
    fitLayerHead(); dropStaleAlt(); rebuild();
  });
  ui.layer.addEventListener("change", function () { S.layer = +ui.layer.value; dropStaleAlt(); rebuild(); });
  ui.head.addEventListener("change", function () {
    S.head = ui.head.value === "mean" ? "mean" : +ui.head.value;
    dropStaleAlt(); rebuild();
  });
  ui.weights.addEventListener("change", function (ev) { chooseAlt(+ev.target.value); rebuild(); });
  ui.grid.addEventListener("click", function (ev) {
    var b = ev.target.closest(".av-tile");
    if (!b) return;
    var h = b.getAttribute("data-head");
    S.layer = +b.getAttribute("data-layer"); S.head = h === "mean" ? "mean" : +h;
    dropStaleAlt(); rebuild();
  });
  fillSelect(ui.example, data.examples.map(function (e, i) { return [i, e.label || e.id]; }));
  chooseExample(0);
  rebuild();
})("__ID__");
"""
