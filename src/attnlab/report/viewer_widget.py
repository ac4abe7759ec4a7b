"""S11: an interactive attention viewer, as an HTML fragment for a site page.

`viewer_html(data)` returns a <div class="attnlab-viewer"> with the viewer's controls and its data as embedded
JSON (the data's format and its check: attnlab.maps). The site's assets draw it: docs/assets/attnlab-viewer.js
(vanilla JavaScript, no library, no URL, so the page works from the built site opened from disk) and
attnlab-viewer.css, which mkdocs.yml loads on every page. Every id and radio-group name is prefixed with the
element id, so several viewers can share a page.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from attnlab.errors import AttnlabError
from attnlab.maps import check_data

ID_RE = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
EMBEDDED = re.compile(r'<div id="([A-Za-z][A-Za-z0-9_-]*)" class="attnlab-viewer".*?</script>\n</div>', re.S)


def _embedded_json(data: dict) -> str:
    # ASCII only, and no <, > or & at all: the JSON can neither close its <script> nor open a comment
    text = json.dumps(data, ensure_ascii=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def viewer_html(data: dict, element_id: str = "attnlab-viewer") -> str:
    """The viewer as one HTML fragment (a div: its controls and its data) for a Markdown page; checks the data
    first."""
    check_data(data)
    if not isinstance(element_id, str) or not ID_RE.fullmatch(element_id):
        raise AttnlabError(f"viewer element id {element_id!r} must be a letter then letters, digits, - or _")
    return SKELETON.replace("__ID__", element_id).replace("__DATA__", _embedded_json(data), 1)


def viewers_in(markup: str) -> dict[str, str]:
    """Every viewer `viewer_html` wrote into `markup`: its element id -> its fragment."""
    return {m.group(1): m.group(0) for m in EMBEDDED.finditer(markup)}


def standalone(fragment: str, assets: Path) -> str:
    """A viewer fragment as a page of its own, the site's script and style for it (in `assets`) inlined: it works
    opened from disk, or inside the Snakemake report."""
    style, script = (assets / "attnlab-viewer.css").read_text(), (assets / "attnlab-viewer.js").read_text()
    return (f'<!doctype html>\n<meta charset="utf-8">\n<style>\n{style}</style>\n{fragment}\n'
            f"<script>\n{script}</script>\n")


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
