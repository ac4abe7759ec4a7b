"""E8: what a head does, on a language where the question has one right answer (a Winograd-style probe).

Sentences come from one template, e.g.
    the {x} did not cross the {y} because it was too {adj} , so the {ref} waited .
with a word-level vocabulary. The adjective decides the referent: a "crosser" adjective (tired) makes it x,
a "crossed" one (wet) makes it y. Models are trained as ordinary next-token models on every word; only the
word after "so the" is scored.

Two versions of the task:
    cheat   x is always an animal and y a place: the adjective's category names the referent, so a model that
            only knows which words are present (a bag of words) can answer. Held out: unseen animal/place pairs.
    closed  x and y both come from one list of nouns, in either slot, so only word order tells them apart.
            Held out: pairs (x, y) whose reversed order (y, x) was trained, so a model blind to order must
            answer the wrong noun of the pair.
Models: the uniform causal average (one averaging block), one transformer block, two blocks. Each is trained
by the one training loop (attnlab.train) into its own folder, with checkpoints, so a killed job resumes.

Output (results/<profile>/winograd/result.json): per version and model the held-out accuracy with its
binomial standard error, the share of answers naming the other noun of the pair and anything else; the
attention maps of the two-block model at the scored position (per block, averaged over heads) for the
map sentences; block 2's row for every adjective; task sizes, settings, provenance.
"""
from __future__ import annotations

import math
import time
from pathlib import Path

import torch

from attnlab import config, layout, provenance
from attnlab.errors import AttnlabError, Diverged
from attnlab.experiments.winograd.settings import check_section
from attnlab.nn.model import LM, attention_kept
from attnlab.nn.spec import ModelSpec
from attnlab.train import finished, job_device, train

VERSIONS = {"cheat": ("average", "one_block"), "closed": ("average", "one_block", "two_blocks")}


def vocabulary(w: dict) -> list[str]:
    """Every word the sentences can use, in a fixed order."""
    words = [t for t in w["template"].split() if not t.startswith("{")]
    words += w["nouns"] + w["animals"] + w["places"] + w["crosser"] + w["crossed"]
    return list(dict.fromkeys(words))


def split_pairs(w: dict, version: str, gen: torch.Generator) -> tuple[list, list]:
    """(trained, held-out) ordered noun pairs (x, y).

    closed: of each unordered pair, one order is held out with probability `held_out`, the other is trained;
    cheat: whole animal/place pairs are held out with probability `held_out` (their nouns are still trained).
    """
    if version == "closed":
        nouns, train_pairs, held = w["nouns"], [], []
        for i, a in enumerate(nouns):
            for b in nouns[i + 1:]:
                pair = [(a, b), (b, a)]
                if torch.rand((), generator=gen) < w["held_out"]:
                    flip = int(torch.randint(2, (), generator=gen))
                    held.append(pair[flip])
                    train_pairs.append(pair[1 - flip])
                else:
                    train_pairs += pair
        return train_pairs, held
    pairs = [(a, p) for a in w["animals"] for p in w["places"]]
    held_mask = torch.rand(len(pairs), generator=gen) < w["held_out"]
    return ([p for p, h in zip(pairs, held_mask) if not h], [p for p, h in zip(pairs, held_mask) if h])


def sentence(w: dict, x: str, y: str, adj: str) -> tuple[list[str], str]:
    """The words of one sentence and its referent."""
    ref = x if adj in w["crosser"] else y
    return w["template"].format(x=x, y=y, adj=adj, ref=ref).split(), ref


def encode(w: dict, pairs: list, vocab: list[str]) -> dict:
    """Rows of token ids (N, L) for every pair and adjective, with the referent, the other noun and the
    position whose next word is the referent."""
    index = {word: i for i, word in enumerate(vocab)}
    rows, refs, others = [], [], []
    for x, y in pairs:
        for adj in w["crosser"] + w["crossed"]:
            words, ref = sentence(w, x, y, adj)
            rows.append([index[t] for t in words])
            refs.append(index[ref])
            others.append(index[y if ref == x else x])
    pos = w["template"].split().index("{ref}") - 1  # the input position that predicts the referent
    return {"rows": torch.tensor(rows), "ref": torch.tensor(refs), "other": torch.tensor(others), "pos": pos}


def spec_of(w: dict, model: str, vocab_size: int, length: int) -> ModelSpec:
    try:
        return ModelSpec(**{**w["model"], **w["models"][model], "vocab_size": vocab_size, "context": length - 1})
    except (AttnlabError, TypeError) as err:
        raise AttnlabError(f"config error at 'winograd.models.{model}': {err}") from None


@torch.no_grad()
def answers(model: LM, data: dict) -> dict:
    """Held-out accuracy at the scored position, its binomial standard error, and where the rest went."""
    model.eval()
    logits, _ = model(data["rows"][:, :-1])
    guess = logits[:, data["pos"]].argmax(-1)                        # (N,)
    n = len(guess)
    right = (guess == data["ref"]).float().mean().item()
    other = (guess == data["other"]).float().mean().item()
    return {"accuracy": right, "accuracy_se": math.sqrt(max(right * (1 - right), 1 / n) / n),
            "other_noun": other, "elsewhere": 1 - right - other, "n": n}


@torch.no_grad()
def block_rows(model: LM, tokens: torch.Tensor, pos: int) -> list[list[float]]:
    """Each attention block's weights from query `pos`, averaged over its heads: (blocks, T) as lists."""
    return [kept["weights"][0, :, pos].mean(0).tolist() for kept in attention_kept(model, tokens[None])]  # (H, T) -> (T,)


def maps(w: dict, model: LM, vocab: list[str], pos: int) -> dict:
    """The map sentences' rows (per block) and, for every adjective, the last block's row."""
    x, y = w["map"]["x"], w["map"]["y"]
    index = {word: i for i, word in enumerate(vocab)}
    out = {"x": x, "y": y, "pos": pos, "sentences": {}, "last_block_by_adjective": {}}
    for adj in w["crosser"] + w["crossed"]:
        words, ref = sentence(w, x, y, adj)
        rows = block_rows(model, torch.tensor([index[t] for t in words[:-1]]), pos)
        out["last_block_by_adjective"][adj] = rows[-1][: pos + 1]
        for role in ("crosser", "crossed"):
            if adj == w["map"][role]:
                out["sentences"][role] = {"adjective": adj, "words": words, "ref": ref,
                                          "blocks": [r[: pos + 1] for r in rows]}
    a, b = out["sentences"]["crosser"]["blocks"], out["sentences"]["crossed"]["blocks"]
    # per block, the largest difference between the two map sentences' rows
    out["block_difference"] = [max(abs(x - y) for x, y in zip(ra, rb)) for ra, rb in zip(a, b)]
    at = w["template"].split().index("{adj}")
    last = out["last_block_by_adjective"]
    out["adjective_weight"] = {role: sum(last[a][at] for a in w[role]) / len(w[role]) for role in ("crosser", "crossed")}
    return out


def train_model(cfg: dict, w: dict, version: str, name: str, data: dict, held: dict, vocab: list[str],
                out_dir: Path) -> tuple[LM, dict]:
    """Train one model (or resume it) and return it with its metrics; raises Diverged where it diverged."""
    spec = spec_of(w, name, len(vocab), data["rows"].size(1))
    run_cfg = {"seed": cfg["seed"], "device": cfg["device"], "threads": cfg.get("threads"), "profile": cfg["profile"],
               "train": {**cfg["train"], **w["train"], "eval_contexts": None}}
    metrics = train(spec, run_cfg, data["rows"], held["rows"], out_dir / f"{version}-{name}",
                    name=f"{version}-{name}", experiment="winograd", progress=False)
    return finished(out_dir / f"{version}-{name}", spec), metrics


def run(cfg: dict, out_dir: Path) -> dict:
    """Every version and model at every seed of the profile. The held-out split is drawn once, with the first
    seed, so that seeds differ only in training. The first seed's result is also the top level (and its models
    sit in out_dir, where S9 and S11 read them); every seed's is under by_seed."""
    seeds = config.seeds(cfg)
    by_seed = {str(seed): run_seed({**cfg, "seed": seed}, layout.seed_dir(out_dir, seed, first=seeds[0]),
                                   split_seed=seeds[0]) for seed in seeds}
    return {**by_seed[str(seeds[0])], "by_seed": by_seed}


def run_seed(cfg: dict, out_dir: Path, split_seed: int) -> dict:
    w = cfg["winograd"]
    check_section(w)
    vocab = vocabulary(w)
    result = {"seed": cfg["seed"], "vocab_size": len(vocab), "versions": {}, "settings": w}
    for version, models in VERSIONS.items():
        trained, held = split_pairs(w, version, torch.Generator().manual_seed(split_seed))
        data, test = encode(w, trained, vocab), encode(w, held, vocab)
        entry = {"pairs_trained": len(trained), "pairs_held_out": len(held), "sentences_trained": len(data["rows"]),
                 "sentences_held_out": len(test["rows"]), "held_out_pairs": held[:8], "models": {}}
        for name in models:
            t0 = time.perf_counter()
            try:
                model, metrics = train_model(cfg, w, version, name, data, test, vocab, out_dir)
            except Diverged as err:  # a result: recorded as such, in place of its accuracy (and maps)
                entry["models"][name] = err.record
                print(f"  seed {cfg['seed']} {version:6s} {name:10s}: {err}", flush=True)
                if version == "closed" and name == w["map"]["model"]:
                    result["maps"] = err.record
                continue
            entry["models"][name] = {**answers(model, test), "train_accuracy": answers(model, data)["accuracy"],
                                     "n_params": metrics["n_params"], "steps": metrics["steps"],
                                     "seconds": round(time.perf_counter() - t0, 1)}
            print(f"  seed {cfg['seed']} {version:6s} {name:10s}: held-out accuracy "
                  f"{entry['models'][name]['accuracy']:.3f} (other noun {entry['models'][name]['other_noun']:.3f})",
                  flush=True)
            if version == "closed" and name == w["map"]["model"]:
                result["maps"] = maps(w, model, vocab, data["pos"])
        result["versions"][version] = entry
    result["chance"] = 0.5
    result["uniform_weight"] = 1 / (data["pos"] + 1)  # a uniform causal row at the scored position
    return result


def main(cfg: dict, out_path) -> dict:
    out_path, device = Path(out_path), job_device(cfg)
    return provenance.measured(cfg, out_path, lambda: run(cfg, out_path.parent), device=device)
