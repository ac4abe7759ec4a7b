/* attnlab: the attention viewer (S11's page, and S1's cross-attention map). report/viewer_widget.py writes each
   viewer as a <div class="attnlab-viewer" id="ID"> holding its controls (every part's id starts with ID-) and its
   data as embedded JSON (ID-data); this draws every one on the page, each apart from the others. Vanilla
   JavaScript, no library, no URL, so the site works opened from disk. The look: attnlab-viewer.css. */
(function () {
  "use strict";

  function start(rootId) {
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
    function shown(t) { return t.replace(/\n/g, "\u21b5").replace(/\t/g, "\u21e5") || "\u2205"; }
    function quote(t) { return "\u201c" + shown(t) + "\u201d"; }
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
        b.lastChild.textContent = blank ? "\u00b7" : w.toFixed(2);
        b.title = quote(toks[S.query]) + " \u2192 " + quote(toks[j]) + ": " + what;
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
      if (a) ui.note.textContent = "Showing \u201c" + a.name + "\u201d weights for " + place(a) +
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
        (alt ? " \u00b7 " + esc(activeAlt().name) : "") + "</span>" +
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
  }

  function startAll() {
    Array.prototype.forEach.call(document.querySelectorAll(".attnlab-viewer"), function (root) { start(root.id); });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", startAll);
  else startAll();
})();
