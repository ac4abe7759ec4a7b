/* attnlab: every chart keeps the text size its spec sets, on any screen. format.chart embeds each chart with
   vegaEmbed; this wraps vegaEmbed, once for the whole site. A chart drawn wider than its box is drawn again,
   narrower: its legends below it and its side-by-side panels (hconcat, a facet's columns) one above another when
   its plots cannot narrow enough side by side, then each plot narrowed by what still overflows. A chart still
   wider than its box (its plots at their narrowest) scrolls inside the box, with a hint; nothing scales its
   text down (attnlab.css: .attnlab-chart svg keeps its size). */
(function () {
  "use strict";
  var embed = window.vegaEmbed;
  if (!embed) return;
  var NARROWEST = 120;  // px: a plot never narrows below this; past it the box scrolls instead
  var REDRAWS = 6;
  var TITLE_CHAR = 7.5;  // px: the width of a character of a title (13 px, bold), about

  function copy(x) { return JSON.parse(JSON.stringify(x)); }

  function rows(spec) {  // the chart's inline data (Altair puts it in datasets)
    var data = spec.data || {};
    return data.values || (spec.datasets || {})[data.name] || [];
  }

  function distinct(spec, channel) {
    if (!channel || !channel.field) return 1;
    var seen = {};
    rows(spec).forEach(function (r) { seen[String(r[channel.field])] = true; });
    return Math.max(1, Object.keys(seen).length);
  }

  function across(spec) {  // how many plots of one width sit side by side
    if (spec.hconcat) return spec.hconcat.length;
    var facet = spec.facet || (spec.encoding && (spec.encoding.facet || spec.encoding.column));
    if (!facet) return 1;
    var n = distinct(spec, facet.column || facet);
    var wrap = spec.columns || facet.columns;
    return facet.row && !facet.column ? 1 : wrap ? Math.min(wrap, n) : n;
  }

  function plots(spec) {  // the views whose numeric width sets the chart's
    if (spec.hconcat || spec.vconcat) {
      return [].concat.apply([], (spec.hconcat || spec.vconcat).map(plots));
    }
    var view = spec.spec || spec;
    return typeof view.width === "number" ? [view] : [];
  }

  function lines(text, chars) {  // a title's words, in lines of at most `chars` characters
    var out = [""];
    String(text).split(" ").forEach(function (word) {
      var last = out[out.length - 1];
      if (last && last.length + 1 + word.length > chars) out.push(word);
      else out[out.length - 1] = last ? last + " " + word : word;
    });
    return out;
  }

  function wrapTitles(spec, chars) {  // a title longer than the box would set the chart's width
    var x = spec.encoding && spec.encoding.x;  // the x axis's title, centred under a plot that may be narrow
    if (x && typeof x.title === "string") x.title = lines(x.title, Math.floor(chars / 2));
    var title = spec.title;
    if (typeof title === "string" || Array.isArray(title)) spec.title = {text: title};
    if (spec.title && spec.title.text) {
      spec.title.text = [].concat.apply([], [].concat(spec.title.text).map(function (line) { return lines(line, chars); }));
    }
    [].concat(spec.spec || [], spec.hconcat || [], spec.vconcat || [], spec.layer || []).forEach(function (sub) {
      wrapTitles(sub, chars);
    });
  }

  function compact(spec, chars, stack) {  // titles wrapped, legends below, (`stack`) panels one above another
    spec = copy(spec);
    wrapTitles(spec, chars);
    spec.config = spec.config || {};
    spec.config.legend = Object.assign({orient: "bottom", direction: "vertical"}, spec.config.legend);
    if (!stack) return spec;
    if (spec.hconcat) { spec.vconcat = spec.hconcat; delete spec.hconcat; }
    if (spec.facet && spec.facet.column && !spec.facet.row) { spec.facet = spec.facet.column; spec.columns = 1; }
    else if (spec.facet && spec.facet.field) spec.columns = 1;
    var enc = spec.encoding;
    if (enc && enc.column && !enc.row) { enc.facet = Object.assign({}, enc.column, {columns: 1}); delete enc.column; }
    else if (enc && enc.facet) enc.facet.columns = 1;
    return spec;
  }

  function narrowed(spec, over) {  // every plot narrower by its share of what overflows
    spec = copy(spec);
    var cut = Math.ceil(over / across(spec)) + 2;
    plots(spec).forEach(function (view) { view.width = Math.max(NARROWEST, view.width - cut); });
    return spec;
  }

  function fits(spec, over) {  // whether narrowing alone, side by side, fits it
    var cut = over / across(spec);
    return plots(spec).every(function (view) { return view.width - cut >= NARROWEST; });
  }

  function overflow(box) { return box.scrollWidth - box.clientWidth; }

  window.vegaEmbed = function (el, spec, opts) {
    opts = Object.assign({renderer: "svg"}, opts);  // svg: text the browser lays out, crisp at any zoom
    var box = typeof el === "string" ? document.querySelector(el) : el;
    var redraws = 0;
    function fit(result) {
      var over = overflow(box);
      if (over <= 1 || box.clientWidth === 0 || redraws >= REDRAWS) {  // 0: not shown (a closed block)
        box.classList.toggle("attnlab-scrolls", over > 1 && box.clientWidth > 0);
        box.setAttribute("data-fitted", redraws);  // drawn for good (a browser test waits for it)
        return result;
      }
      redraws += 1;
      var room = plots(spec).some(function (view) { return view.width > NARROWEST; });
      if (redraws === 1) spec = compact(spec, Math.floor(box.clientWidth / TITLE_CHAR), !fits(spec, over));
      else if (room) spec = narrowed(spec, over);
      else { redraws = REDRAWS; return fit(result); }  // nothing left to narrow: it scrolls
      result.finalize();
      return embed(el, spec, opts).then(fit);
    }
    return embed(el, spec, opts).then(fit);
  };
})();
