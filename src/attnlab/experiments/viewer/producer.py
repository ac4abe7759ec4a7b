"""S11: the attention of trained models, written out for the site's interactive viewer.

Every weight comes from a trained model of this project run on the sentence shown: E8's Winograd blocks on
its sentences, the chapter's one- and two-block Shakespeare models (ladder rows L9 and B2) on lines of the
validation split. For S9's sentences the viewer can also show the adversarial attention S9 found: the learned
map with the scored position's row replaced, head by head, by the adversary's.

Output (results/<profile>/viewer/result.json): the viewer's data ({"examples": [...]}, checked by
attnlab.maps.check_data; a model whose run diverged has its Diverged record in place of its maps),
settings, provenance.
"""
from __future__ import annotations

import json
from pathlib import Path

import torch

from attnlab import layout, provenance, registry
from attnlab.data.bpe import Tokenizer
from attnlab.data.prepare import load_tokens
from attnlab.errors import AttnlabError, Diverged, is_diverged
from attnlab.experiments.winograd import producer as wg
from attnlab.nn.model import attention_kept
from attnlab.train import finished, pick_device

DECIMALS = 5  # weights are rounded for the page's size; rows of up to 100 keys still sum to 1 within 1e-3


@torch.no_grad()
def maps(model, tokens: list[int]) -> list[list[list[list[float]]]]:
    """Every attention layer's weights on one sequence: [layer][head] -> T x T lists."""
    return [[rounded(head) for head in kept["weights"][0]] for kept in attention_kept(model, torch.tensor([tokens]))]


def rounded(weights: torch.Tensor) -> list[list[float]]:
    return [[round(x, DECIMALS) for x in row] for row in weights.tolist()]


def trained(run_dir: Path):
    """The finished model of a run, or its Diverged record: the viewer shows that in place of its maps."""
    try:
        return finished(run_dir)
    except Diverged as err:
        print(f"  {err}", flush=True)
        return err.record


def maps_of(models: dict, tokens: list[int]) -> dict:
    """Every model's maps on one sequence; a diverged model's record as it is."""
    return {name: m if is_diverged(m) else maps(m, tokens) for name, m in models.items()}


def winograd_examples(cfg: dict, results: Path) -> list[dict]:
    """The map sentences and S9's sentences, through E8's one- and two-block models."""
    w, s = cfg["winograd"], cfg["viewer"]
    vocab = wg.vocabulary(w)
    index = {word: i for i, word in enumerate(vocab)}
    models = {f"E8 {name.replace('_', ' ')}": trained(results / layout.model_dir("winograd", f"closed-{name}"))
              for name in ("one_block", "two_blocks")}
    out = []
    for adj in s["adjectives"]:
        words, ref = wg.sentence(w, w["map"]["x"], w["map"]["y"], adj)
        words = words[: w["template"].split().index("{ref}")]  # up to the word that must name the referent
        ids = [index[t] for t in words]
        out.append({"id": f"winograd-{adj}", "label": f"Winograd: … too {adj} , so the [{ref}]", "tokens": words,
                    "models": maps_of(models, ids)})
    explained = json.loads((results / registry.get("explanation").result).read_text())
    if is_diverged(explained):  # the model S9 explains diverged: it has no sentences to show
        return out
    studied = f"E8 {explained['settings']['model'].replace('_', ' ')}"
    for i, (ex, words) in enumerate(zip(explained["examples"], explained["words"])):
        ids, pos = [index[t] for t in words], ex["pos"]
        learned = maps_of(models, ids)
        best = max(range(len(ex["adversarial_jsd"])), key=lambda k: (ex["adversarial_feasible"][k],
                                                                     ex["adversarial_jsd"][k] or 0))
        alternatives = []
        for head, row in enumerate(ex["adversarial"][best]):
            weights = [list(r) for r in learned[studied][-1][head]]
            weights[pos] = [round(x, DECIMALS) for x in row] + [0.0] * (len(words) - pos - 1)
            alternatives.append({
                "name": f"adversarial, head {head + 1}", "model": studied, "layer": len(learned[studied]) - 1,
                "head": head, "weights": weights,
                "note": (f"S9's adversary for this sentence (row of \"{words[pos]}\", every head replaced at once): "
                         f"Jensen-Shannon divergence {ex['adversarial_jsd'][best]:.3f} nats from the learned row, "
                         f"output moved by {ex['adversarial_tv'][best]:.4f} in total variation"
                         + ("" if ex["adversarial_feasible"][best] else " (above the bound: no adversary met it)"))})
        out.append({"id": f"s9-{i}", "label": f"S9 sentence {i + 1}: {' '.join(words)} …", "tokens": words,
                    "models": learned, "alternatives": alternatives})
    return out


def shakespeare_examples(cfg: dict, results: Path, data_dir: Path, runs: list[str]) -> list[dict]:
    """Lines of the validation split through the chapter's trained models."""
    s = cfg["viewer"]
    tok = Tokenizer.load(data_dir / "tokenizer.json")
    val = load_tokens(data_dir, "val").tolist()
    models = {}
    for run in runs:
        experiment, _, name = run.partition(".")
        models[f"{name} (Shakespeare)"] = trained(results / registry.get(experiment).run_dir(name, cfg["seed"]))
    length = s["tokens"]
    for name, m in models.items():
        if not is_diverged(m) and m.spec.context < length:  # the profile's check refuses it before any job
            raise AttnlabError(f"viewer.tokens is {length}, more than the context of {name} ({m.spec.context})")
    newline = tok.encode("\n")
    starts = [i + len(newline) for i in range(len(val) - len(newline)) if val[i:i + len(newline)] == newline]
    out = []
    step = max(1, len(starts) // max(1, s["lines"]))
    for n, start in enumerate(starts[::step][: s["lines"]]):
        ids = val[start:start + length]
        out.append({"id": f"shakespeare-{n}", "label": f"Shakespeare: {tok.decode(ids)[:60].strip()} …",
                    "tokens": [tok.decode([t]) for t in ids],
                    "models": maps_of(models, ids)})
    return out


def main(cfg: dict, out_path, data_dir) -> dict:
    from attnlab.maps import check_data, drawable

    out_path = Path(out_path)
    results = layout.results_of(out_path)
    runs = registry.get("viewer").needed_runs

    def run():
        data = {"examples": winograd_examples(cfg, results)
                + shakespeare_examples(cfg, results, Path(data_dir), runs)}
        shown, _ = drawable(data)  # what the page will draw: checked here, where a bad map is cheap to find
        if shown["examples"]:
            check_data(shown)
        return {**data, "settings": cfg["viewer"]}

    return provenance.measured(cfg, out_path, run, device=pick_device("cpu"))
