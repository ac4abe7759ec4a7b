"""S11: the interactive attention viewer, filled with the trained models' weights (viewer/result.json)."""
from __future__ import annotations

from attnlab.report.format import diverged_note
from attnlab.report.viewer import drawable, viewer_html

NAME = "viewer"


def blocks(site) -> dict[str, str]:
    r = site.res.result(NAME)
    out = site.skeleton(NAME)
    if r is None:
        return out | {"viewer": site.missing(NAME), "contents": ""}
    shown, lost = drawable(r)
    examples = shown["examples"]
    models = sorted({m for e in examples for m in e["models"]})
    out["viewer"] = diverged_note(lost) + ("\n" + viewer_html(shown) if examples else "")
    out["contents"] = (f"{len(examples)} sentences and {len(models)} models ({', '.join(models) or 'none'}); "
                       f"{sum(bool(e.get('alternatives')) for e in examples)} sentences carry S9's adversarial rows")
    return out
