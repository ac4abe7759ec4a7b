"""What a chart draws, read back from Vega's own scene graph (vl-convert: Altair's offline converter).

A mark's item carries an ARIA description built from its tooltip ("field: value; field: value"), so the scene
graph says which rows each panel of a faceted chart holds. `problems(spec)` lists, in one line each, what is
wrong with what a chart draws."""
from __future__ import annotations

import json
import re
from pathlib import Path

import vl_convert as vlc

BOUNDED = re.compile(r"share|accuracy|fraction|probabilit", re.I)  # a field so named lies in [0, 1]
EMBED = re.compile(r'vegaEmbed\("#([^"]+)", (\{.*?\}), \{actions')


def site_charts(site: Path) -> dict[str, dict]:
    """Every chart embedded in the built site: '<page>#<chart id>' -> its Vega-Lite spec."""
    out = {}
    for html in sorted(site.rglob("*.html")):
        for chart_id, blob in EMBED.findall(html.read_text()):
            out[f"{html.relative_to(site).with_suffix('')}#{chart_id}"] = json.loads(blob.replace("<\\/", "</"))
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
