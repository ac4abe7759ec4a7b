"""`python -m attnlab new-experiment NAME --kind KIND`: a new experiment's folder, as stubs that already run.

An experiment is its folder (src/attnlab/experiments/<name>/) and one line of the registry (experiments.yaml); this
writes both and nothing else. The stubs measure something real but trivial, so the DAG runs, the claims load and the
page builds before the first edit: replace the measurement, write the page's prose, add claims.
"""
from __future__ import annotations

import re
from pathlib import Path

import yaml

from attnlab import registry
from attnlab.errors import AttnlabError

KINDS = ("analysis", "training", "benchmark")
NAME = re.compile(r"[a-z][a-z0-9_]*")

INIT = '"""{title}: its settings, {producer}page and claims, in one folder."""\n'

SETTINGS = {
    "analysis": '''"""{title}: what a profile sets for `{name}` (no torch: every check of a profile reads it)."""
from __future__ import annotations

SCHEMA = {{
    "type": "object", "additionalProperties": False, "default": {{}},
    "description": "{title}: the size of its measurement",
    "properties": {{"n": {{"type": "integer", "minimum": 2, "default": 1000, "description": "draws per seed"}}}},
}}
DEFAULTS = {{}}
''',
    "benchmark": '''"""{title}: what a profile sets for `{name}` (no torch: every check of a profile reads it)."""
from __future__ import annotations

SCHEMA = {{
    "type": "object", "additionalProperties": False, "default": {{}},
    "description": "{title}: the sizes it times",
    "properties": {{"sizes": {{"type": "array", "items": {{"type": "integer", "minimum": 1}}, "minItems": 1,
                              "default": [64, 128], "description": "square matrix sizes"}}}},
}}
DEFAULTS = {{}}
''',
    "training": '''"""{title}: what a profile sets for `{name}` (no torch: every check of a profile reads it)."""
from __future__ import annotations

import yaml

SCHEMA = {{"$ref": "#/$defs/runs", "description": "{title}: its runs, name -> run"}}

# its runs, each a model spec (attnlab.nn.spec) over the profile's model and training settings
DEFAULTS = yaml.safe_load("""
{name}-one: {{mixer: multihead, position: learned, mlp: true, norm: pre}}
{name}-two: {{mixer: multihead, position: learned, mlp: true, norm: pre, n_blocks: 2}}
""")
''',
}

PRODUCER = {
    "analysis": '''"""{title}: the measurement. Replace `run` with yours; `main` stamps its result with provenance."""
from __future__ import annotations

import torch


def run(n: int, seed: int) -> dict:
    """The stub's measurement: the mean of n standard normal draws, and its standard error."""
    x = torch.randn(n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return {{"n": n, "mean": x.mean().item(), "mean_se": (x.std() / n ** 0.5).item()}}


def main(cfg: dict, out_path) -> dict:
    from attnlab import provenance

    return provenance.measured(cfg, out_path, lambda: run(cfg["{name}"]["n"], cfg["seed"]))
''',
    "benchmark": '''"""{title}: the timing. Replace `run` with yours; `main` stamps its result with provenance."""
from __future__ import annotations

import torch

from attnlab.bench import harness


def run(sizes: list[int], device: torch.device, seed: int) -> dict:
    """The stub's timing: one n x n matmul per size (median time over repeats, and its FLOPs)."""
    g = torch.Generator().manual_seed(seed)
    rows = []
    for n in sizes:
        a, b = (torch.randn(n, n, generator=g).to(device) for _ in range(2))
        rows.append({{"n": n, **harness.measure(lambda: a @ b, device, flops=2.0 * n ** 3)}})
    return {{"rows": rows}}


def main(cfg: dict, out_path) -> dict:
    from attnlab import provenance

    cfg, device = harness.setup(cfg)
    return provenance.measured(cfg, out_path, lambda: run(cfg["{name}"]["sizes"], device, cfg["seed"]), device)
''',
}

PAGE = {
    "analysis": '''"""{title}: its page's blocks (page.md places them)."""
from __future__ import annotations

import pandas as pd

from attnlab.report.context import experiment_page
from attnlab.report.format import md_table

NAME = "{name}"


def render(ctx) -> dict[str, str]:
    """The blocks drawn from its result (ctx.result); the not-run warning stands in for them until it has run."""
    r = ctx.result
    return {{"table": md_table(pd.DataFrame([{{"n": r["n"], "mean": r["mean"], "standard error": r["mean_se"]}}]))}}


blocks = experiment_page(NAME, render)
''',
    "benchmark": '''"""{title}: its page's blocks (page.md places them)."""
from __future__ import annotations

import pandas as pd

from attnlab.report.context import experiment_page
from attnlab.report.format import md_table

NAME = "{name}"


def render(ctx) -> dict[str, str]:
    """The blocks drawn from its result (ctx.result); the not-run warning stands in for them until it has run."""
    rows = [{{k: row.get(k) for k in ("n", "median_ms", "flops_per_s")}} for row in ctx.result["rows"]]
    return {{"table": md_table(pd.DataFrame(rows))}}


blocks = experiment_page(NAME, render)
''',
    "training": '''"""{title}: its page's blocks (page.md places them)."""
from __future__ import annotations

from attnlab.report.context import experiment_page

NAME = "{name}"


def render(ctx) -> dict[str, str]:
    """Its runs over seeds come with every training page (the `seeds` block); add what your runs show here."""
    return {{}}


blocks = experiment_page(NAME, render)
''',
}

TEMPLATE = '''# {title}

**The question.** Say in a sentence what this experiment asks, and why a reader would care.

**What was run.** Say what is measured, at which sizes and seeds.

## What came out

<!-- attnlab:{block} -->

## Does the claim hold?

<!-- attnlab:verdicts -->

## Rerun it

<!-- attnlab:rerun -->
'''

CLAIMS = '''# {title}: the claims its result decides, each with the sources' value, how ours is computed and its test.
# The format and the expression language: src/attnlab/claims/README.md. Expressions read its result as `{name}`.
claims: []
'''

READS = {"analysis": ["seed", "{name}"], "benchmark": ["seed", "device", "{name}"], "training": []}


def files(name: str, kind: str, title: str) -> dict[str, str]:
    """The folder's files (name -> text) for an experiment of `kind`."""
    fill = {"name": name, "title": title, "producer": "" if kind == "training" else "producer, ",
            "block": "seeds" if kind == "training" else "table"}
    meta = {"title": title, "reads": [r.format(**fill) for r in READS[kind]]}
    out = {"__init__.py": INIT.format(**fill),
           "experiment.yaml": f"# {name}: what its registry line does not say (schemas/experiment.schema.yaml)\n"
                              + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, default_flow_style=None),
           "settings.py": SETTINGS[kind].format(**fill), "page.py": PAGE[kind].format(**fill),
           "page.md": TEMPLATE.format(**fill), "claims.yaml": CLAIMS.format(**fill)}
    if kind in PRODUCER:
        out["producer.py"] = PRODUCER[kind].format(**fill)
    return out


def new_experiment(name: str, kind: str, title: str | None = None,
                   registry_file: Path = registry.REGISTRY, root: Path = registry.EXPERIMENTS) -> Path:
    """Write the folder of a new experiment and its registry line (checked first: nothing is written if the name
    or kind is wrong, or the experiment exists)."""
    if not NAME.fullmatch(name):
        raise AttnlabError(f"experiment name '{name}': use lower-case letters, digits and _ (a Python name)")
    if kind not in KINDS:
        raise AttnlabError(f"experiment kind '{kind}': one of {', '.join(KINDS)}")
    folder = Path(root) / name
    if folder.exists() or name in {e["name"] for e in yaml.safe_load(Path(registry_file).read_text())["experiments"]}:
        raise AttnlabError(f"experiment '{name}' exists already ({folder})")
    folder.mkdir(parents=True)
    for file, text in files(name, kind, title or name.replace("_", " ").capitalize()).items():
        (folder / file).write_text(text)
    text = Path(registry_file).read_text()
    Path(registry_file).write_text(text.rstrip("\n") + f"\n  - {{name: {name}, kind: {kind}}}\n")
    registry.load.cache_clear()
    return folder
