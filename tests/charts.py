"""What a chart draws, read back from Vega's own scene graph (vl-convert: Altair's offline converter).

A mark's item carries an ARIA description built from its tooltip ("field: value; field: value"), so the scene
graph says which rows each panel of a faceted chart holds. `problems(spec)` lists, in one line each, what is
wrong with what a chart draws."""
from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import vl_convert as vlc

from attnlab.report.format import charts_in

BOUNDED = re.compile(r"share|accuracy|fraction|probabilit", re.I)  # a field so named lies in [0, 1]


def site_charts(site: Path) -> dict[str, dict]:
    """Every chart embedded in the built site: '<page>#<chart id>' -> its Vega-Lite spec."""
    out = {}
    for html in sorted(site.rglob("*.html")):
        for chart_id, spec in charts_in(html.read_text()).items():
            out[f"{html.relative_to(site).with_suffix('')}#{chart_id}"] = spec
    return out


def version_charts(results: Path, claims: Path) -> dict[str, dict]:
    """Every chart the site of one version draws, '<page>#<chart id>' -> spec, from the pages' blocks (no mkdocs)."""
    from attnlab.report.build import STATIC_PAGES, context, page_blocks, pages

    site, out = context(results, claims), {}
    for page in [*pages(), *STATIC_PAGES]:
        for block in page_blocks(site, page).values():
            for chart_id, spec in charts_in(str(block)).items():
                out[f"{page.removesuffix('.md')}#{chart_id}"] = spec
    return out


def facet_fields(spec: dict) -> list[str]:
    """The fields a chart is faceted on (row, column or wrapped facet), as its tooltips name them."""
    facet = spec.get("facet") or {}
    channels = [facet] if "field" in facet else list(facet.values())
    return [c.get("field") for c in channels if isinstance(c, dict) and c.get("field")]


def layers_with_own_data(spec: dict) -> int:
    """How many layers inside a facet bring data of their own (each is drawn whole in every panel)."""
    inner = spec.get("spec") or {}
    return sum("data" in layer for layer in inner.get("layer", []))


def described(item: dict) -> dict[str, str]:
    """A mark item's ARIA description as {field: value}."""
    pairs = (part.split(": ", 1) for part in (item.get("description") or "").split("; "))
    return {p[0]: p[1] for p in pairs if len(p) == 2}


def cells(node: dict):
    """The panels of a faceted chart's scene graph: every group named 'cell', in drawing order."""
    if node.get("marktype") == "group" and node.get("name") == "cell":
        yield from node.get("items", [])
        return
    for item in node.get("items", []) or []:
        yield from cells(item)


def marks(node: dict):
    """Every item of every data mark (role 'mark') below a node, with its mark's name."""
    for item in node.get("items", []) or []:
        if item.get("role") == "mark" and item.get("marktype") != "group":
            for it in item.get("items", []):
                yield item.get("name"), it
        yield from marks(item)


def problems(name: str, spec: dict) -> list[str]:
    """What is wrong with what `spec` draws: a panel holding another panel's rows, a bounded measure (share,
    accuracy, fraction, probability) drawn outside [0, 1], a facet layer that draws its own data everywhere."""
    out = []
    if layers_with_own_data(spec):
        out.append(f"{name}: {layers_with_own_data(spec)} layer(s) inside the facet bring their own data")
    scene = vlc.vegalite_to_scenegraph(spec)["scenegraph"]
    fields = facet_fields(spec)
    for i, cell in enumerate(cells(scene)):
        seen: dict[str, set[str]] = {f: set() for f in fields}
        for mark, item in marks(cell):
            desc = described(item)
            for f in fields:
                if f in desc:
                    seen[f].add(desc[f])
            for field, value in desc.items():
                if BOUNDED.search(field) and _number(value) is not None and not 0 <= _number(value) <= 1:
                    out.append(f"{name}: panel {i + 1} draws {field} = {value}, outside [0, 1] ({mark})")
        for f, values in seen.items():
            if len(values) > 1:
                out.append(f"{name}: panel {i + 1} holds rows of {len(values)} values of {f}: {sorted(values)}")
    return out


def faceted_and_described(spec: dict) -> bool:
    """Whether the check can see a faceted chart's panels: some item of some panel names a facet field."""
    fields = facet_fields(spec)
    scene = vlc.vegalite_to_scenegraph(spec)["scenegraph"]
    return any(f in described(item) for cell in cells(scene) for _, item in marks(cell) for f in fields)


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", "").replace("\u2212", "-"))  # d3-format writes a minus as U+2212
    except ValueError:
        return None


def png(spec: dict, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(vlc.vegalite_to_png(spec, scale=1))
    return path


# ---- What a reader can read: legends, series, axes and text (issue 30) ----------------------------------------

MIN_GAP_PX = 4  # tick labels nearer than this read as one number
MIN_FONT_PX = 10  # on a 1280-px page
PAGE_CHART_PX = 650  # the widest a chart is drawn on a 1280-px page (measured in Chromium): a wider one is shrunk
COVER_PX = 2.0  # a sample of a series lying this close to a mark drawn over it cannot be seen
VISIBLE_PX = 10  # a series shows at least this much of its own line, or one of its points
FAINT = 0.5  # a legend swatch drawn at less than this opacity is a band's colour, not a line's
NEUTRAL = {"black", "#000", "#000000", "#333", "#333333"}  # the colour of a legend of shapes or dashes


ORIGINS: dict[int, tuple[float, float]] = {}  # a group item's absolute origin, by id, as _flatten met it


class Item(dict):
    """A scene-graph item with its mark's type, role and name, its place in drawing order, its absolute origin
    and the group items above it."""


def _flatten(node: dict, ox=0.0, oy=0.0, above=(), out=None) -> list[Item]:
    """Every item of every mark below `node`, in drawing order, with absolute coordinates."""
    out = [] if out is None else out
    for item in node.get("items", []) or []:
        flat = Item(item, marktype=node.get("marktype"), role=node.get("role"), name=node.get("name"),
                    ox=ox, oy=oy, above=above, order=len(out), mark=id(node), uid=id(item))
        out.append(flat)
        if node.get("marktype") == "group":
            ORIGINS[id(item)] = (ox + item.get("x", 0), oy + item.get("y", 0))
            _flatten_group(item, ox + item.get("x", 0), oy + item.get("y", 0), above + (id(item),), out)
    return out


def _flatten_group(group: dict, ox, oy, above, out):
    for child in group.get("items", []) or []:
        _flatten(child, ox, oy, above, out)


def scene_items(spec: dict) -> list[Item]:
    scene = vlc.vegalite_to_scenegraph(spec)["scenegraph"]
    ORIGINS.clear()
    return _flatten(scene)


def _is_data(it: Item) -> bool:
    return it["role"] == "mark" and it["marktype"] not in ("group", "text")


def _colour(it: dict) -> str | None:
    """The colour an item shows: its fill where filled, else its stroke."""
    for key in ("fill", "stroke"):
        value = it.get(key)
        if value and value not in ("transparent", "none") and it.get(f"{key}Opacity", 1) > 0:
            return str(value).lower()
    return None


# (a) a legend's entries can be told apart, and a swatch is a colour the chart draws its marks in

def legends(items: list[Item]) -> list[list[tuple[str, Item]]]:
    """Each legend as [(label, its symbol)], in order."""
    out, symbols = {}, {}
    for it in items:
        if it["role"] == "legend-symbol":
            symbols[it["above"]] = it
        elif it["role"] == "legend-label" and it["above"] in symbols:
            out.setdefault(it["above"][:-2], []).append((it.get("text", ""), symbols[it["above"]]))
    return list(out.values())


def _look(symbol: dict) -> tuple:
    """What a reader sees of a legend symbol: colour, shape and (where its outline shows) its dash."""
    stroke_shows = symbol.get("stroke") not in (None, "transparent", "none") and symbol.get("strokeWidth", 1) > 0
    dash = tuple(symbol.get("strokeDash") or ())
    return _colour(symbol), symbol.get("shape"), dash if stroke_shows and dash != (1, 0) else ()


def legend_problems(name: str, items: list[Item]) -> list[str]:
    """Legend entries a reader cannot tell apart, and swatches too faint to be the colour of a line or point."""
    out = []
    for legend in legends(items):
        looks = [_look(sym) for _, sym in legend]
        if len(set(looks)) < len(looks):
            same = [label for (label, _), look in zip(legend, looks) if looks.count(look) > 1]
            out.append(f"{name}: legend entries {same} are drawn alike ({looks[0][1]}, {looks[0][0]})")
        for label, sym in legend:
            part = "fill" if _filled(sym) else "stroke"
            alpha = sym.get("opacity", 1) * sym.get(f"{part}Opacity", 1)
            if alpha < FAINT:
                out.append(f"{name}: legend swatch of {label!r} is faint (opacity {alpha:.2f}), not its line's colour")
    return out


# (b) every series a legend names is drawn, and not wholly under another mark

def _samples(it: Item, nxt: Item | None) -> list[tuple[float, float]]:
    """Points along what an item draws (a line item: its vertex and the way to the next vertex)."""
    x, y = it["ox"] + it.get("x", 0), it["oy"] + it.get("y", 0)
    if it["marktype"] == "rule":
        x2 = it["ox"] + it.get("x2", it.get("x", 0))
        y2 = it["oy"] + it.get("y2", it.get("y", 0))
        return _along(x, y, x2, y2)
    if it["marktype"] == "line" and nxt is not None and nxt["mark"] == it["mark"]:
        return _along(x, y, nxt["ox"] + nxt.get("x", 0), nxt["oy"] + nxt.get("y", 0))
    return [(x, y)]


def _along(x1, y1, x2, y2, step=2.0):
    n = max(1, int(((x2 - x1) ** 2 + (y2 - y1) ** 2) ** 0.5 / step))
    return [(x1 + (x2 - x1) * i / n, y1 + (y2 - y1) * i / n) for i in range(n + 1)]


def _solid(it: dict) -> bool:
    return tuple(it.get("strokeDash") or (1, 0)) in ((1, 0), ())


def _segments(items: list[Item]):
    """(x1, y1, x2, y2, half width, drawing order, colour, width, solid, dash) of every line and rule piece and
    every axis line."""
    for a, b in zip(items, items[1:] + [None]):
        if a["marktype"] == "line" and a["role"] == "mark" and b is not None and b["mark"] == a["mark"]:
            end = (b["ox"] + b.get("x", 0), b["oy"] + b.get("y", 0))
        elif a["marktype"] == "rule" and a["role"] in ("mark", "axis-domain"):
            end = (a["ox"] + a.get("x2", a.get("x", 0)), a["oy"] + a.get("y2", a.get("y", 0)))
        else:
            continue
        width = a.get("strokeWidth", 2 if a["marktype"] == "line" else 1)
        order = 1e9 if a["role"] == "axis-domain" else a["order"]  # a line along an axis is lost in it either way
        yield (a["ox"] + a.get("x", 0), a["oy"] + a.get("y", 0), *end, max(COVER_PX, width / 2), order,
               _colour(a), width, _solid(a) or a["role"] == "axis-domain", tuple(a.get("strokeDash") or ()))


def _covers(seg: tuple, colour, width: float, dash: tuple, drawn: int) -> bool:
    """Whether a piece of line `seg` hides a line of another colour beneath or along it: drawn over it (solid, or
    in the same dash), or at least as wide as a dashed or thinner one."""
    if seg[6] == colour:
        return False
    if not seg[8]:
        return seg[9] == dash and seg[5] > drawn
    return seg[5] > drawn or seg[7] > width or (not _solid({"strokeDash": dash}) and seg[7] >= width)


def _uncovered(points, segments, symbols, colour, width, dash, drawn, size) -> int:
    """How many of `points` no mark of another colour (nor an axis line) lies over."""
    if not points:
        return 0
    p = np.array(points, dtype=float)
    hidden = np.zeros(len(p), dtype=bool)
    segs = np.array([s[:5] for s in segments if _covers(s, colour, width, dash, drawn)] or np.zeros((0, 5)))
    if len(segs):
        a, b, half = segs[:, None, :2], segs[:, None, 2:4], segs[:, None, 4]
        ab = b - a
        t = np.clip(((p[None] - a) * ab).sum(-1) / np.maximum((ab * ab).sum(-1), 1e-9), 0, 1)
        d = np.linalg.norm(p[None] - (a + t[..., None] * ab), axis=-1)
        hidden |= (d <= half).any(0)
    syms = np.array([s[:3] for s in symbols if s[3] > drawn and s[4] != colour and s[2] >= 0.8 * size and s[5]]
                    or np.zeros((0, 3)))
    if len(syms) and size:
        d = np.linalg.norm(p[None] - syms[:, None, :2], axis=-1)
        hidden |= (d <= COVER_PX).any(0)
    return int((~hidden).sum())


def _filled(it: dict) -> bool:
    return it.get("fill") not in (None, "transparent", "none") and it.get("fillOpacity", 1) > 0


def _drawn_pieces(items: list[Item]):
    """Each data mark's items grouped by what they look like: (mark id, colour, dash) -> items."""
    pieces: dict[tuple, list[Item]] = {}
    for it in items:
        if _is_data(it):
            pieces.setdefault((it["mark"], _colour(it), tuple(it.get("strokeDash") or ())), []).append(it)
    return pieces


def series_problems(name: str, items: list[Item]) -> list[str]:
    """Every colour a legend names has marks, some of them in view; every reference line shows somewhere."""
    out = []
    pieces = _drawn_pieces(items)
    segments = list(_segments(items))
    symbols = [(it["ox"] + it.get("x", 0), it["oy"] + it.get("y", 0), it.get("size", 64), it["order"], _colour(it),
                _filled(it)) for it in items if _is_data(it) and it["marktype"] == "symbol"]

    def hidden(groups: list[list[Item]]) -> bool:
        """Whether a series shows less than VISIBLE_PX of its own line and none of its points."""
        shown = 0.0
        for group in groups:
            first = group[0]
            if first["marktype"] not in ("line", "rule", "symbol"):
                return _too_small(group)
            if first["marktype"] == "symbol":  # each point drawn in turn; a line through a point does not hide it
                shown += VISIBLE_PX * sum(_uncovered(_samples(it, None), [], symbols, _colour(it), 0, (), it["order"],
                                                     it.get("size", 64)) for it in group)
                continue
            pts = [p for a, b in zip(group, group[1:] + [None]) for p in _samples(a, b)]
            width = first.get("strokeWidth", 2 if first["marktype"] == "line" else 1)
            shown += 2.0 * _uncovered(pts, segments, [], _colour(first), width, tuple(first.get("strokeDash") or ()),
                                      first["order"], 0)
        return shown < VISIBLE_PX

    legend_colours = set()
    for legend in legends(items):
        colours = {_colour(sym) for _, sym in legend}
        if len(colours) == 1 and (len(legend) > 1 or colours <= NEUTRAL):
            continue  # a shape or dash legend in one neutral colour: legend_problems tells its entries apart
        for label, sym in legend:
            colour = _colour(sym)
            if colour is None:
                continue
            legend_colours.add(colour)
            mine = [g for (mark, c, _), g in pieces.items() if c == colour]
            if not mine:
                out.append(f"{name}: the legend names {label!r} but nothing is drawn in its colour {colour}")
            elif hidden(mine):
                out.append(f"{name}: series {label!r} is drawn wholly under other marks (or too small to see)")
    for (mark, colour, dash), group in pieces.items():
        if group[0]["marktype"] in ("rule", "line") and colour not in legend_colours and hidden([group]) \
                and not _too_short(group):
            out.append(f"{name}: a {group[0]['marktype']} ({colour}, dash {list(dash)}) lies wholly under another "
                       f"mark or an axis")
    return out


def _too_short(group: list[Item]) -> bool:
    """A rule or line under VISIBLE_PX long (a tick of an error bar): too short to judge."""
    pts = [p for a, b in zip(group, group[1:] + [None]) for p in _samples(a, b)]
    return len(pts) * 2.0 < VISIBLE_PX


def _too_small(group: list[Item]) -> bool:
    """Bars and cells of less than one square pixel in all."""
    if group[0]["marktype"] != "rect":
        return False
    return sum(abs(it.get("width", 0) * it.get("height", 0)) for it in group) < 1.0


# (c) a quantitative axis labels the whole range its data span

def _value(text: str) -> float | None:
    text = str(text).strip().replace("\u2212", "-").replace(",", "")
    si = {"k": 1e3, "M": 1e6, "G": 1e9, "m": 1e-3, "µ": 1e-6, "n": 1e-9}
    if text[-1:] in si and _number(text[:-1]) is not None:
        return _number(text[:-1]) * si[text[-1]]
    return _number(text)


def _extent(it: Item, horizontal: bool) -> list[float]:
    pos, size, end, origin = ("x", "width", "x2", it["ox"]) if horizontal else ("y", "height", "y2", it["oy"])
    out = [origin + it.get(pos, 0)]
    if size in it:
        out.append(out[0] + it[size])
    if end in it:
        out.append(origin + it[end])
    return out


def axes(items: list[Item]):
    """Each axis as a dict: orient, labels [(value, position in its view), shown ones], the groups above it."""
    found: dict[tuple, dict] = {}
    for it in items:
        if it["role"] == "axis" and it["marktype"] == "group":
            key = it["above"] + (it["uid"],)
            found[key] = {"orient": it.get("orient"), "labels": [], "above": it["above"], "key": key}
    for it in items:
        axis = found.get(it["above"])
        if it["role"] == "axis-label" and axis is not None and it.get("opacity", 1) > 0:
            axis["labels"].append((_value(it.get("text", "")), _local(it, axis["above"][-1], _horizontal(axis))))
    return list(found.values())


def _horizontal(axis: dict) -> bool:
    return axis["orient"] in ("top", "bottom")


def _local(it: Item, group: int, horizontal: bool) -> float:
    """An item's position along one direction, from the origin of the group item `group` (a view or panel)."""
    x, y = ORIGINS[group]
    return it["ox"] + it.get("x", 0) - x if horizontal else it["oy"] + it.get("y", 0) - y


def _axis_data(axis: dict, data: list[Item]) -> list[float]:
    """Where the data an axis measures lie along it: the marks of its own view, else (a facet's axis, drawn in a
    header) those of every panel beside it, each from its panel's origin."""
    depth = len(axis["above"])
    for share in (depth, depth - 1):
        mine = [it for it in data if it["above"][:share] == axis["above"][:share] and len(it["above"]) > share - 1]
        if mine:
            horizontal = _horizontal(axis)
            out = []
            for it in mine:
                origin = ORIGINS[it["above"][share - 1]] if share == depth else ORIGINS[it["above"][share]]
                shift = origin[0] if horizontal else origin[1]
                out += [e - shift for e in _extent(it, horizontal)]
            return out
    return []


def axis_problems(name: str, items: list[Item]) -> list[str]:
    out = []
    data = [it for it in items if _is_data(it)]
    for axis in axes(items):
        labels = sorted((p, v) for v, p in axis["labels"] if v is not None)
        if len(labels) < 2 or len(labels) < len(axis["labels"]):
            continue  # a band or ordinal axis
        px = _axis_data(axis, data)
        if not px:
            continue
        lo_px, hi_px = min(px), max(px)
        (p0, v0), (p1, _), (pn1, _), (pn, vn) = labels[0], labels[1], labels[-2], labels[-1]
        if lo_px < p0 - abs(p1 - p0) - 1 or hi_px > pn + abs(pn - pn1) + 1:
            out.append(f"{name}: the {axis['orient']} axis labels {v0:g} to {vn:g}, but its data reach past them")
        values = [v for _, v in labels]
        if min(values) > 0 and _is_log(labels):
            slope = (math.log(vn) - math.log(v0)) / (pn - p0)
            top = max(math.exp(math.log(v0) + slope * (p - p0)) for p in (lo_px, hi_px))
            decade = 10 ** math.floor(math.log10(top) + 1e-9)
            if max(values) < decade * (1 - 1e-9):
                out.append(f"{name}: the {axis['orient']} log axis has no label at or above {decade:g}, though its "
                           f"data reach {top:.3g}")
        out += _collisions(name, axis, items)
    return out


def _collisions(name: str, axis: dict, items: list[Item]) -> list[str]:
    """Shown, unrotated tick labels of a horizontal axis closer than MIN_GAP_PX to their neighbour."""
    if not _horizontal(axis):
        return []
    boxes = []
    for it in items:
        if it["role"] == "axis-label" and it["above"] == axis["key"] and it.get("opacity", 1) > 0 \
                and not it.get("angle"):
            x, w = it["ox"] + it.get("x", 0), _text_width(it)
            left = {"left": x, "right": x - w}.get(it.get("align"), x - w / 2)
            boxes.append((left, left + w, it.get("text")))
    boxes.sort()
    return [f"{name}: tick labels {a[2]!r} and {b[2]!r} collide ({b[0] - a[1]:.1f} px apart)"
            for a, b in zip(boxes, boxes[1:]) if b[0] - a[1] < MIN_GAP_PX]


def _is_log(labels: list[tuple[float, float]]) -> bool:
    """Whether label values sit along their positions as on a log scale rather than a linear one."""
    if len(labels) < 3:
        return False
    p = np.array([p for p, _ in labels])
    v = np.array([v for _, v in labels])

    def misfit(y):
        fit = np.polyval(np.polyfit(p, y, 1), p)
        return float(np.abs(fit - y).max() / (np.ptp(y) or 1))
    return misfit(np.log(v)) < misfit(v) / 2


# (d) text a reader can read: no text under 10 px, no label cut short

def chart_width(spec: dict) -> float:
    """The width a chart is drawn at, whole (axes, legends and title included), before a page shrinks it."""
    svg = vlc.vegalite_to_svg(spec)
    return float(re.search(r'<svg[^>]*\swidth="([\d.]+)"', svg).group(1))


def text_problems(name: str, items: list[Item], width: float) -> list[str]:
    """Text under MIN_FONT_PX as a 1280-px page draws it (shrunk with a chart wider than PAGE_CHART_PX), and
    labels cut short."""
    out = []
    shrink = min(1.0, PAGE_CHART_PX / width)
    small = sorted({(it.get("fontSize", 11), it["role"]) for it in items if it["marktype"] == "text"
                    and it.get("text") not in (None, "") and it.get("fontSize", 11) * shrink < MIN_FONT_PX})
    for size, role in small:
        out.append(f"{name}: {role} text of {size * shrink:.1f} px at 1280 px (under {MIN_FONT_PX} px"
                   + (f"; the chart is {width:.0f} px wide, shrunk to {PAGE_CHART_PX})" if shrink < 1 else ")"))
    for it in items:
        if it["marktype"] == "text" and it.get("limit") and _text_width(it) > it["limit"]:
            out.append(f"{name}: {it['role']} {it.get('text')!r} is cut off at {it['limit']} px")
    return out


def _text_width(it: dict) -> float:
    """The width of a line of text in an Arial-like face (Arial's advance widths, in em, by kind of character)."""
    text = it.get("text")
    text = " ".join(text) if isinstance(text, list) else str(text)
    return it.get("fontSize", 11) * sum(_advance(c) for c in text)


def _advance(c: str) -> float:
    if c.isdigit():
        return 0.556
    if c in ",.:;'!|il ":
        return 0.278
    if c in "()[]-":
        return 0.333
    return 0.667 if c.isupper() or c in "mw%@" else 0.5


def readability_problems(name: str, spec: dict) -> list[str]:
    """Checks (a)-(d) over one chart's scene graph."""
    items = scene_items(spec)
    return (legend_problems(name, items) + series_problems(name, items) + axis_problems(name, items)
            + text_problems(name, items, chart_width(spec)))
