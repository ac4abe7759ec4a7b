"""The claims registry: every experiment's claims file (registry.Experiment.claims_file), loaded and checked,
each claim's expressions compiled (attnlab.claims.expressions) and its checks parsed (attnlab.claims.checks)."""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from attnlab import registry
from attnlab.claims.checks import parse_check
from attnlab.claims.expressions import SAMPLED_VIEWS, compile_expression
from attnlab.config import read_yaml
from attnlab.errors import AttnlabError

DESCRIPTIVE = "descriptive"  # a part's (or a whole claim's) kind: shown, tested by nothing
KINDS = ("measured", "computed", DESCRIPTIVE)  # computed: arithmetic on the settings or a fixed count, judged
# without noise; descriptive: shown beside the claim, tested by nothing (a number the source's statement does not fix)
ORIGINS = ("source", "ours")  # whose statement a claim tests: the chapter's or the survey's, or the project's own


@dataclass
class Claim:
    id: str
    claim: str
    chapter_value: object
    values: dict[str, str]          # part -> expression ("" is the only part of a simple claim)
    checks: dict[str, dict]         # part -> check
    tolerance_note: str
    experiment: str = ""                                # whose claims file holds it: its page
    files: set[str] = field(default_factory=set)      # result files (by experiment name) it reads
    keys: dict = field(default_factory=dict)          # result file -> the top-level keys it reads (None: all)
    rows: set[str] = field(default_factory=set)       # training runs it reads
    trained_rows: set[str] = field(default_factory=set)  # rows whose ppl it reads
    code: dict = field(default_factory=dict, repr=False)
    se_code: dict = field(default_factory=dict, repr=False)  # part -> expression of its standard error ('se:')
    kinds: dict = field(default_factory=dict)         # part -> "measured" or "computed"
    sampled: set[str] = field(default_factory=set)    # parts that read a perplexity (the jackknife's to vary)
    origin: str = "source"  # "ours": a statement the sources never make, the project's own finding
    reason_code: object = field(default=None, repr=False)  # 'not_run_reason': why a null value was not measured

    @property
    def kind(self) -> str:
        """"computed" when every tested part is (the claim is then judged holds / fails, apart from the measured
        ones); "descriptive" when no part is tested; else "measured"."""
        tested = [k for k in self.kinds.values() if k != DESCRIPTIVE]
        if not tested:
            return DESCRIPTIVE
        return "computed" if all(k == "computed" for k in tested) else "measured"

    @property
    def ours(self) -> bool:
        return self.origin == "ours"


@dataclass
class Registry:
    chapter: str
    reference: dict
    claims: list[Claim]

    def by_id(self, claim_id: str) -> Claim:
        return next(c for c in self.claims if c.id == claim_id)


def load_registry(folder: str | Path | None = None) -> Registry:
    """The claims of every experiment that has them, in registry order: each experiment's claims.yaml in its
    folder, or, given `folder` (claims written elsewhere, as tests do), folder/<experiment>.yaml."""
    if folder is None:
        parts = [load_file(e.claims_file, e.name) for e in registry.load() if e.claims]
        folder = registry.EXPERIMENTS
    else:
        folder = Path(folder)
        parts = [load_file(folder / f"{e.name}.yaml", e.name) for e in registry.load() if e.claims]
        stray = sorted(p.name for p in folder.glob("*.yaml") if p.stem not in {e.name for e in registry.load()})
        if stray:
            raise AttnlabError(f"claims file {folder / stray[0]} belongs to no experiment in the registry")
    claims = [c for part in parts for c in part.claims]
    dup = sorted({c.id for c in claims if sum(d.id == c.id for d in claims) > 1})
    if dup:
        raise AttnlabError(f"claim {dup[0]}: duplicate id across the claims files under {folder}")
    reference = {}
    for part in parts:
        for key, value in part.reference.items():
            reference.setdefault(key, {}).update(value)
    return Registry(chapter=parts[0].chapter if parts else "", reference=reference, claims=claims)


def load_file(path: Path, experiment: str) -> Registry:
    doc = read_yaml(path, "claims file")
    if not isinstance(doc.get("claims"), list):
        raise AttnlabError(f"claims file {path} must be a mapping with a 'claims' list")
    claims, seen = [], set()
    for i, entry in enumerate(doc["claims"]):
        claim = parse_claim(entry, where=f"{path.name} entry {i + 1}", experiment=experiment)
        if claim.id in seen:
            raise AttnlabError(f"claim {claim.id}: duplicate id in {path}")
        seen.add(claim.id)
        claims.append(claim)
    return Registry(chapter=doc.get("chapter", ""), reference=doc.get("reference") or {}, claims=claims)


def parse_claim(entry, where: str = "registry", experiment: str = "") -> Claim:
    if not isinstance(entry, dict) or not entry.get("id"):
        raise AttnlabError(f"{where}: every claim needs an 'id'")
    cid = str(entry["id"])

    def bad(msg):
        return AttnlabError(f"claim {cid}: {msg}")

    for key in ("claim", "chapter_value", "value", "check", "tolerance_note"):
        if key not in entry:
            raise bad(f"missing '{key}'")
    unknown = set(entry) - {"id", "claim", "chapter_value", "value", "check", "tolerance_note", "se", "kind", "origin",
                            "not_run_reason"}
    if unknown:
        raise bad(f"unknown keys {sorted(unknown)}")
    value, check = entry["value"], entry["check"]
    if isinstance(value, dict):  # several named parts, each with its own check
        if not isinstance(check, dict) or set(check) != set(value):
            raise bad("'value' has parts " f"{sorted(value)}; 'check' must be a mapping with the same parts")
        values, checks = {str(k): v for k, v in value.items()}, {str(k): check[k] for k in value}
    else:
        values, checks = {"": value}, {"": check}
    chapter = entry["chapter_value"]
    if list(values) != [""] and not (isinstance(chapter, dict) and set(map(str, chapter)) <= set(values)):
        raise bad(f"'value' has parts {sorted(values)}; 'chapter_value' must name what the chapter says for "
                  "each part it covers, with the same part names")
    if list(values) == [""] and isinstance(chapter, dict):
        raise bad("'chapter_value' has parts but 'value' is one expression: give 'value' the same parts")
    origin = entry.get("origin", "source")
    if origin not in ORIGINS:
        raise bad(f"'origin' must be one of {list(ORIGINS)} (ours: a statement the sources never make), got {origin!r}")
    claim = Claim(id=cid, claim=str(entry["claim"]), chapter_value=entry["chapter_value"],
                  values={}, checks={}, tolerance_note=str(entry["tolerance_note"]), experiment=experiment,
                  origin=origin)
    claim.kinds = _parse_kind(entry.get("kind", "measured"), list(values), bad)
    for part, expr in values.items():
        label = f"value{'.' + part if part else ''}"
        if not isinstance(expr, str) or not expr.strip():
            raise bad(f"{label} must be an expression string")
        claim.values[part] = expr
        claim.code[part] = compile_expression(expr, claim, label)
        claim.checks[part] = _descriptive_check(checks[part], part, bad) if claim.kinds[part] == DESCRIPTIVE \
            else parse_check(checks[part], cid, part)
        if {n.id for n in ast.walk(ast.parse(expr, mode="eval")) if isinstance(n, ast.Name)} & SAMPLED_VIEWS:
            claim.sampled.add(part)
    se = entry.get("se")
    if se is not None:  # the sampling error a result file states for a value (e.g. a held-out accuracy's)
        se = {"": se} if list(values) == [""] and not isinstance(se, dict) else se
        if not isinstance(se, dict) or not set(map(str, se)) <= set(values):
            raise bad(f"'se' must name parts of 'value' ({sorted(values)}), one expression each")
        for part, expr in se.items():
            label = f"se{'.' + str(part) if part else ''}"
            if not isinstance(expr, str) or not expr.strip():
                raise bad(f"{label} must be an expression string")
            claim.se_code[str(part)] = compile_expression(expr, claim, label)
    reason = entry.get("not_run_reason")
    if reason is not None:  # why a value is null, where the run file says (e.g. sizes a CPU did not run)
        if not isinstance(reason, str) or not reason.strip():
            raise bad("not_run_reason must be an expression string")
        claim.reason_code = compile_expression(reason, claim, "not_run_reason")
    return claim


def _descriptive_check(check, part: str, bad) -> dict:
    """A descriptive part is tested by nothing: its check must be null, so that no test is shown that is not run."""
    if check is not None:
        raise bad(f"check{'.' + part if part else ''}: a descriptive part is tested by nothing; give it check null")
    return {}


def _parse_kind(kind, parts: list[str], bad) -> dict[str, str]:
    """`kind: computed` (the whole claim) or `kind: {part: computed, ...}` (those parts; the rest measured)."""
    if isinstance(kind, str):
        kind = {p: kind for p in parts}
    if not isinstance(kind, dict) or not set(map(str, kind)) <= set(parts):
        raise bad(f"'kind' must be one of {list(KINDS)} or a mapping part -> kind over the parts {sorted(parts)}")
    if set(kind.values()) - set(KINDS):
        raise bad(f"'kind' must be one of {list(KINDS)}, got {sorted(set(kind.values()) - set(KINDS))}")
    return {p: str(kind.get(p, "measured")) for p in parts}
