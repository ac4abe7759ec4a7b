"""S11: the interactive attention viewer, filled with the trained models' weights (viewer/result.json)."""
from __future__ import annotations

import yaml

from attnlab.report.format import diverged_note
from attnlab.report.readings import count
from attnlab.report.context import experiment_page
from attnlab.maps import drawable
from attnlab.report.viewer_widget import viewer_html
from attnlab.experiments.viewer import derive

NAME = "viewer"


# The papers' protocols beside this one (report/protocols.py renders it at the page's protocol marker).
PROTOCOL = yaml.safe_load("""
sources: the survey (it cites no paper for this)
rows:
  - aspect: what is shown
    paper: >-
      A promise: one can watch live how a token spreads its attention over the words of a sentence. No model,
      data or paper is named.
    here: >-
      Trained models of this project, every layer and head: E8's one- and two-block models on its map sentence
      with the adjectives {viewer.adjectives} and on {explanation.show} of S9's sentences; the ladder's L9
      and B2 on {viewer.lines} lines of the validation split, {viewer.tokens} tokens each.
    why: >-
      The models whose behaviour the other pages measure, so that a map can be read beside those measurements.
  - aspect: what a map means
    paper: >-
      –
    here: >-
      For S9's sentences, the adversary's row beside the learned one: a different map for the same output,
      within S9's bound.
    why: >-
      [S9](explanation.md) measures how far a map can move without changing the answer.
""")



def render(ctx) -> dict[str, str]:
    r, out = ctx.result, {}
    shown, lost = drawable(r)
    examples = shown["examples"]
    out["viewer"] = diverged_note(lost) + ("\n" + viewer_html(shown) if examples else "")
    out["contents"] = contents(examples)
    return out


def contents(examples: list[dict]) -> str:
    """What the viewer holds, counted from its data: the sentences, the models in all and how many of them read
    each sentence (the claim S11 counts the most on one sentence), and the sentences with S9's rows."""
    models, per, alternatives = derive.holdings(examples)
    each = (f"{per[0]}" if len(per) == 1 else f"{per[0]} to {per[-1]}") if per else "0"
    return (f"{count(len(examples), 'sentence')} and {count(len(models), 'model')} in all "
            f"({', '.join(models) or 'none'}), {each} of them on each sentence; "
            f"{count(alternatives, 'sentence carries', 'sentences carry')} S9's adversarial rows")


blocks = experiment_page(NAME, render)
