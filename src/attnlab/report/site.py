"""Render the site: hand-written page templates + generated blocks -> markdown -> mkdocs build --strict.

The hand-written pages in docs/ carry the prose. Wherever a page says
`<!-- attnlab:NAME -->`, the builder puts a generated block (a table, a chart,
the verdicts, the rerun command, the provenance of the run files). A page
whose inputs are missing still renders: its blocks say "not run".
"""
from __future__ import annotations

import html
import importlib
import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pandas as pd
import yaml

from attnlab.config import digest
from attnlab.errors import AttnlabError
from attnlab.report import charts, tables
from attnlab.report.claims import Registry, Results, Verdict, evaluate_all, fmt, gather, load_registry, verdict_table

DOCS_SRC = Path(__file__).resolve().parents[3] / "docs"
MARKER = re.compile(r"<!--\s*attnlab:(\w+)\s*-->")
GENERATED_FLAG = ".attnlab-generated"
VENDOR_JS = ["assets/vendor/vega.min.js", "assets/vendor/vega-lite.min.js", "assets/vendor/vega-embed.min.js"]
PAGES = {  # file -> (nav title, builder): a Site method, or "module:function" taking the Site
    "index.md": ("Overview", "index"),
    "data.md": ("Data and tokenizer", "data"),
    "averaging.md": ("E1 · Averaging", "averaging"),
    "ladder.md": ("E2 · The ladder", "ladder"),
    "scores.md": ("E3 · Why divide by √d_k", "attnlab.report.pages.scores:blocks"),
    "scaling.md": ("E3 · √d_k, trained", "attnlab.report.pages.scaling:blocks"),
    "depth.md": ("E4 · Pre- vs post-norm", "attnlab.report.pages.depth:blocks"),
    "position.md": ("E5 · Position and length", "attnlab.report.pages.position:blocks"),
    "params.md": ("E7 · Parameter accounting", "attnlab.report.pages.params:blocks"),
    "equivalence.md": ("E9 · Equal to PyTorch", "attnlab.report.pages.equivalence:blocks"),
    "multihead.md": ("S4 · Multi-head cost", "attnlab.report.pages.multihead:blocks"),
    "bench.md": ("Performance", "bench"),
}
STATIC_PAGES = {"about.md": "How verdicts work"}


# ------------------------------------------------------------ markdown bits

def cell(x) -> str:
    text = fmt(x) if not isinstance(x, str) else x
    return text.replace("|", "\\|").replace("\n", " ")


def md_table(df: pd.DataFrame, headers: dict[str, str] | None = None, formats: dict | None = None) -> str:
    """A markdown table; `headers` picks and renames columns, `formats` maps column -> callable."""
    headers = headers or {c: c for c in df.columns}
    formats = formats or {}
    lines = ["| " + " | ".join(cell(h) for h in headers.values()) + " |", "|" + "---|" * len(headers)]
    for _, r in df.iterrows():
        vals = []
        for col in headers:
            v = r[col]
            v = None if v is pd.NA or (isinstance(v, float) and pd.isna(v)) else v
            vals.append(cell(formats[col](v) if col in formats and v is not None else ("–" if v is None else v)))
        lines.append("| " + " | ".join(vals) + " |")
    return "\n".join(lines)


def num(decimals: int):
    return lambda v: f"{v:,.{decimals}f}"


def not_run(*paths: str, command: str | None = None) -> str:
    body = "Missing: " + ", ".join(f"`{p}`" for p in paths) + "."
    if command:
        body += f" Produce it with `{command}`."
    return f'!!! warning "not run"\n    {body}\n'


def chart(chart_id: str, spec: dict) -> str:
    blob = json.dumps(spec, separators=(",", ":"), default=str).replace("</", "<\\/")
    return (f'<div id="{chart_id}" class="attnlab-chart"></div>\n<script>\n'
            f'document.addEventListener("DOMContentLoaded", function () {{ '
            f'vegaEmbed("#{chart_id}", {blob}, {{actions: false}}); }});\n</script>\n')


def badge(verdict: str) -> str:
    return f'<span class="verdict verdict-{verdict.replace(" ", "-")}">{verdict}</span>'


def code(command: str) -> str:
    return f"```bash\n{command}\n```\n"


# ------------------------------------------------------------------ context

class Site:
    """Everything the pages draw from: run files, verdicts, config."""

    def __init__(self, res: Results, registry: Registry, verdicts: list[Verdict], config: dict):
        self.res, self.registry, self.verdicts, self.config = res, registry, verdicts, config
        self.profile = config.get("profile") or "<profile>"
        self.rdir = f"results/{self.profile}"

    def snakemake(self, target: str = "", gpu: bool = False, cores: int = 4) -> str:
        """The command that (re)builds `target`. Targets go first: --resources and --config take several
        values and would swallow a target written after them."""
        gpu_flag = " --resources gpu=1" if gpu else ""
        target = f" {self.rdir}/{target}" if target else ""
        return f"snakemake{target} --cores {cores}{gpu_flag} --config profile={self.profile}"

    def page_verdicts(self, page: str | None) -> list[Verdict]:
        return [v for v in self.verdicts if page is None or v.claim.page == page]

    # ------------------------------------------------------------ shared blocks
    def settings_table(self) -> str:
        """The profile's training settings, as the runs received them."""
        cfg = self.config
        data, model, train = (cfg.get(k) or {} for k in ("data", "model", "train"))
        settings = pd.DataFrame([
            ("profile", self.profile), ("config hash", digest(cfg)), ("seed", cfg.get("seed")),
            ("corpus sha256", data.get("sha256")), ("vocabulary", data.get("vocab_size")),
            ("d_model", model.get("d_model")), ("context", model.get("context")),
            ("steps", train.get("steps")), ("batch", train.get("batch_size")),
            ("learning rate (AdamW)", train.get("lr")), ("weight decay", train.get("weight_decay")),
            ("warmup steps", train.get("warmup_steps")),
        ], columns=["setting", "value"])
        return md_table(settings.dropna())

    def verdicts_block(self, page: str | None, link: bool = False) -> str:
        chosen = self.page_verdicts(page)
        if not chosen:
            return "_No claims registered for this page._\n"
        df = pd.DataFrame([{
            "id": (f"[{v.claim.id}]({v.claim.page}.md#verdicts)" if link and f"{v.claim.page}.md" in PAGES
                   else v.claim.id),
            "claim": v.claim.claim, "chapter": fmt(v.claim.chapter_value, max_str=16),
            "reproduced": "" if v.reproduced is None else fmt(v.reproduced, max_str=16),
            "verdict": badge(v.verdict), "why": v.note,
        } for v in chosen])
        out = md_table(df, {"id": "claim", "claim": "what the chapter says", "chapter": "chapter",
                            "reproduced": "reproduced", "verdict": "verdict", "why": "test (computed)"})
        if not link:
            notes = "\n".join(f"- **{v.claim.id}** — {v.claim.tolerance_note}" for v in chosen)
            out += f"\n\nWhy these tolerances:\n\n{notes}\n"
        return out + "\n"

    def provenance_block(self, files: list[str]) -> str:
        prov = self.res.provenance()
        used = [f for f in files if f in prov]
        if not used:
            return "No run files yet, so nothing on this page has a provenance; every number is *not run*.\n"
        fields = {"commit": "commit", "config_hash": "config hash", "profile": "profile", "device": "device",
                  "clocks": "GPU clocks", "torch": "torch", "date": "date", "wall_seconds": "wall (s)",
                  "seed": "seed"}
        rows = [{"file": f"`{self.rdir}/{f}`", **{k: prov[f].get(k) for k in fields}} for f in used]
        for r in rows:
            r["clocks"] = clocks(r["clocks"])
        shared = ("commit", "config_hash", "profile", "device", "torch", "seed")
        if len({tuple(r[k] for k in shared) for r in rows}) == 1:  # one kind of run: a list, not a table
            first = {**rows[0], "file": ", ".join(r["file"] for r in rows),
                     "date": _span(r["date"] for r in rows),
                     "wall_seconds": _total(r["wall_seconds"] for r in rows),
                     "clocks": "; ".join(sorted({r["clocks"] for r in rows if r["clocks"]})) or None}
            labels = {"file": "files" if len(rows) > 1 else "file", **fields,
                      "wall_seconds": "wall (s, total)" if len(rows) > 1 else "wall (s)"}
            items = "\n".join(f"- **{label}**: {cell(first[k]) if first[k] is not None else '–'}"
                              for k, label in labels.items())
            return items + "\n"
        note = ""
        for key, label in (("commit", "commits"), ("config_hash", "configurations"), ("device", "devices")):
            distinct = {r[key] for r in rows}
            if len(distinct) > 1:
                note += f"These run files come from {len(distinct)} different {label}. "
        table = md_table(pd.DataFrame(rows), {"file": "file", **fields})
        return (f'!!! note "mixed provenance"\n    {note}\n\n' if note else "") + table + "\n"

    def files_of(self, kinds: list[str] | None) -> list[str]:
        prov = self.res.provenance()
        if kinds is None:
            return list(prov)
        prefixes = tuple({"stats": "data/"}.get(k, k + "/") for k in kinds)  # results/<profile>/<folder>/
        return [f for f in prov if f.startswith(prefixes)]

    # ---------------------------------------------------------------- pages
    def index(self) -> dict[str, str]:
        counts = Counter(v.verdict for v in self.verdicts)
        summary = ", ".join(f"**{counts[k]}** {k}" for k in ("reproduced", "not reproduced", "diverged", "not run")
                            if counts[k])
        return {
            "profile": f"`{self.profile}`",
            "results_dir": f"`{self.rdir}/`",
            "settings": self.settings_table(),
            "rerun": code(self.snakemake(gpu=True)),
            "summary": summary or "no claims registered",
            "verdicts": self.verdicts_block(None, link=True),
            "provenance": self.provenance_block(self.files_of(None)),
        }

    def data(self) -> dict[str, str]:
        stats = self.res.stats
        rerun = self.snakemake("data/stats.json")
        if stats is None:
            missing = not_run(f"{self.rdir}/data/stats.json", command=rerun)
            blocks = {k: missing for k in ("stats_table", "merges_table")} | {"split_chart": ""}
        else:
            c03 = self.chapter_value("C0.3")
            chapter_counts = {**(self.chapter_value("C0.2") or {}), **(c03 or {})}
            merges = tables.merges_table(stats, self.chapter_value("C0.4"))
            blocks = {
                "stats_table": md_table(tables.stats_table(stats), formats={"value": _pretty}),
                "split_chart": chart("chart-split", charts.split_chart(stats, chapter_counts)),
                "merges_table": md_table(merges, {"rank": "rank", "reproduced": "reproduced", "chapter": "chapter",
                                                  "same": "same"},
                                         {"reproduced": _token, "chapter": _token}),
            }
        return blocks | {"verdicts": self.verdicts_block("data"), "rerun": code(rerun),
                         "provenance": self.provenance_block(self.files_of(["stats"]))}

    def averaging(self) -> dict[str, str]:
        e1 = self.res.e1
        rerun = self.snakemake("e1/averaging.json", cores=1)
        if e1 is None:
            missing = not_run(f"{self.rdir}/e1/averaging.json", command=rerun)
            blocks = {"matrix_table": missing, "diffs_table": missing, "matrix_chart": ""}
        else:
            ch = {**(self.chapter_value("C1.2") or {}), "shuffle": self.chapter_value("C1.1")}
            diffs = pd.DataFrame([
                ("last row on x vs on x[randperm] (C1.1)", e1.get("shuffle_max_abs_diff"), ch.get("shuffle")),
                ("loop of means vs A @ x (C1.2)", e1.get("loop_vs_matmul_max_abs_diff"), ch.get("loop_vs_matmul")),
                ("loop of means vs softmax(S) @ x (C1.2)", e1.get("loop_vs_softmax_max_abs_diff"),
                 ch.get("loop_vs_softmax")),
                ("−inf mask still −inf in float16 (C1.3)", e1.get("float16_mask_is_inf"), True),
            ], columns=["comparison", "reproduced", "chapter"])
            blocks = {
                "matrix_table": md_table(tables.matrix_table(e1), formats={c: _weight for c in
                                                                           tables.matrix_table(e1).columns[1:]}),
                "matrix_chart": chart("chart-matrix", charts.matrix_chart(tables.matrix_long(e1))),
                "diffs_table": md_table(diffs, {"comparison": "comparison", "reproduced": "reproduced (max |diff|)",
                                                "chapter": "chapter"}),
            }
        return blocks | {"d": f"{e1.get('d')}" if e1 else "–", "verdicts": self.verdicts_block("averaging"),
                         "rerun": code(rerun), "provenance": self.provenance_block(self.files_of(["e1"]))}

    def ladder(self) -> dict[str, str]:
        res = self.res
        ladder = tables.ladder_table(res, self.registry.reference)
        run = ladder[ladder["status"] != "not run"]
        missing_rows = [r for r in ladder["row"] if r not in res.ladder]
        one = self.snakemake(ladder_target(["L6"]), gpu=True)
        every = self.snakemake(ladder_target(list(ladder["row"])), gpu=True)
        redo = self.snakemake(ladder_target(missing_rows), gpu=True) if missing_rows else ""
        blocks = {
            "ladder_table": md_table(ladder, {
                "row": "rung", "description": "what it adds", "n_params": "params", "val_ppl": "val ppl",
                "chapter_val_ppl": "chapter val ppl", "train_ppl": "train ppl",
                "chapter_train_ppl": "chapter train ppl", "status": "status"},
                {"n_params": lambda v: f"{int(v):,}", "val_ppl": num(2), "train_ppl": num(2),
                 "chapter_val_ppl": num(2), "chapter_train_ppl": num(2)}),
            "spec_table": md_table(run, {"row": "rung", "n_blocks": "blocks", "mixer": "mixer", "n_heads": "heads",
                                         "residual": "residual", "position": "position", "mlp": "MLP",
                                         "norm": "norm"}) if len(run) else "_No rung has run yet._",
            "missing": (not_run(*[f"{self.rdir}/ladder/{r}/metrics.json" for r in missing_rows], command=redo)
                        if missing_rows else ""),
            "ladder_chart": chart("chart-ladder", charts.ladder_chart(ladder)) if len(run) else "",
            "settings": self.settings_table(),
            "rerun": code(f"# one rung\n{one}\n# the whole ladder\n{every}"),
            "verdicts": self.verdicts_block("ladder"),
            "provenance": self.provenance_block(self.files_of(["ladder"])),
        }
        curves = tables.curves_table(res)
        blocks["curves_chart"] = chart("chart-curves", charts.curves_chart(curves)) if len(curves) else \
            "_No training curves yet._\n"
        params = tables.param_table(res)
        blocks["params_chart"] = chart("chart-params", charts.params_chart(params)) if len(params) else \
            "_No rung has run yet._\n"
        blocks["runs_table"] = self._runs_table() if res.ladder else ""
        return blocks

    def bench(self) -> dict[str, str]:
        b = self.res.bench
        rerun = self.snakemake("bench/throughput.json", gpu=True, cores=2)
        if b is None:
            missing = not_run(f"{self.rdir}/bench/throughput.json", command=rerun)
            return {"throughput_table": missing, "tokenizer_table": missing, "throughput_chart": "",
                    "rerun": code(rerun), "provenance": self.provenance_block(self.files_of(["bench"]))}
        speed = pd.DataFrame([("attnlab (spec-built model, one attention core)", b["attnlab_tokens_per_s"]),
                              ("plain PyTorch reference (fused q/k/v, SDPA, same weights)", b["reference_tokens_per_s"])],
                             columns=["model", "tokens/s"])
        facts = pd.DataFrame([
            ("parameters", f"{b['n_params']:,}"), ("batch × context", f"{b['batch_size']} × {b['context']}"),
            ("timed rounds (after warm-up)", f"{b['steps']} (after {b.get('warmup', '–')})"),
            ("CPU threads", b.get("threads")), ("ratio attnlab / reference (medians)", f"{b['ratio']:.3f}"),
            ("ratio, median of paired rounds", fmt(b.get("ratio_paired_median"))),
            ("max |logit difference| with copied weights", fmt(b["max_abs_logit_diff"])),
        ], columns=["measure", "value"])
        tok = pd.DataFrame([
            ("train the BPE on the whole corpus (s)", b.get("tokenizer_train_seconds")),
            ("encode the whole corpus (s)", b.get("tokenizer_encode_seconds")),
            ("encode 100 KB again with the saved tokenizer (s)", b.get("encode_100kb_seconds")),
        ], columns=["step", "seconds"])
        return {"throughput_table": md_table(speed, formats={"tokens/s": num(0)}) + "\n\n" + md_table(facts),
                "throughput_chart": chart("chart-throughput", charts.throughput_chart(speed)),
                "tokenizer_table": md_table(tok, formats={"seconds": num(3)}),
                "rerun": code(rerun), "provenance": self.provenance_block(self.files_of(["bench"]))}

    def _runs_table(self) -> str:
        recs = []
        for row in tables.row_order(self.res.ladder):
            m = self.res.ladder[row]
            ev = m.get("eval") or {}
            recs.append({"row": row, "steps": m.get("steps"), "tok_s": m.get("tokens_per_second"),
                         "resumed": m.get("resumed_from_step"), "method": ev.get("method"),
                         "val_tokens": ev.get("val_tokens_scored"), "train_tokens": ev.get("train_tokens_scored")})
        return md_table(pd.DataFrame(recs), {"row": "rung", "steps": "steps", "tok_s": "tokens/s",
                                             "resumed": "resumed from step", "method": "evaluation",
                                             "val_tokens": "val tokens scored", "train_tokens": "train tokens scored"},
                        {"tok_s": lambda v: f"{v:,.0f}", "val_tokens": lambda v: f"{int(v):,}",
                         "train_tokens": lambda v: f"{int(v):,}"})

    def chapter_value(self, claim_id: str):
        """What the chapter says for a claim (None if the registry has no such claim)."""
        try:
            return self.registry.by_id(claim_id).chapter_value
        except StopIteration:
            return None

    def chapter_parts(self, claim_id: str) -> dict:
        """A several-part claim's chapter values by part ({} when absent or not in parts)."""
        value = self.chapter_value(claim_id)
        return value if isinstance(value, dict) else {}


def ladder_target(rows: list[str]) -> str:
    """Snakemake target(s) for ladder rows; several rows use bash brace expansion."""
    rows_part = rows[0] if len(rows) == 1 else "{" + ",".join(rows) + "}"
    return f"ladder/{rows_part}/metrics.json"


def _span(dates) -> str:
    dates = sorted({str(d) for d in dates})
    return dates[0] if len(dates) == 1 else f"{dates[0]} … {dates[-1]}"


def _total(values) -> float | None:
    values = [v for v in values if v is not None]
    return round(sum(values), 3) if values else None


def clocks(c) -> str | None:
    if c is None:
        return None
    if "error" in c:
        return f"NVML: {c['error']}"
    return f"SM {c.get('sm_mhz')} / max {c.get('max_sm_mhz')} MHz, {c.get('temperature_c')} °C"


def _pretty(v) -> str:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return f"`{v}`" if isinstance(v, str) and len(v) > 20 else fmt(v)
    return f"{v:,}" if isinstance(v, int) else f"{v:,.4g}"


def _token(v) -> str:
    return f"<code>{html.escape(v.replace(' ', '␣'))}</code>" if isinstance(v, str) else "–"


def _weight(v) -> str:
    return "0" if v == 0 else f"{v:.4f}"


# ------------------------------------------------------------------- build

def page_blocks(site: Site, builder: str) -> dict[str, str]:
    if ":" in builder:
        module, function = builder.split(":")
        return getattr(importlib.import_module(module), function)(site)
    return getattr(site, builder)()


def render(template: str, blocks: dict[str, str], page: str, strict: bool = True) -> str:
    def sub(m):
        name = m.group(1)
        if name not in blocks:
            if strict:
                raise AttnlabError(f"docs page {page}: unknown block <!-- attnlab:{name} -->")
            return m.group(0)
        return blocks[name].rstrip("\n")
    text = MARKER.sub(sub, template)
    if "provenance" in blocks and "## Provenance" not in text:  # every generated page ends with one
        text = text.rstrip("\n") + "\n\n## Provenance\n\n" + blocks["provenance"]
    return text.rstrip("\n") + "\n"


def mkdocs_config(site: Site, out_docs: Path, out_site: Path, pages: list[str]) -> dict:
    nav = [{PAGES[p][0]: p} for p in PAGES if p in pages] + [{t: p} for p, t in STATIC_PAGES.items() if p in pages]
    return {
        "site_name": f"attnlab · {site.profile}",
        "site_description": "A chapter on attention, re-derived by measurement",
        "docs_dir": str(out_docs.resolve()),
        "site_dir": str(out_site.resolve()),
        "use_directory_urls": False,  # plain .html files: the site also works opened from disk
        "theme": {"name": "material", "font": False, "features": ["content.code.copy"]},
        "plugins": ["search"],  # not "offline": it loads a shim from unpkg
        "markdown_extensions": ["admonition", "attr_list", "tables", {"toc": {"permalink": True}}],
        "extra_javascript": VENDOR_JS,
        "extra_css": ["assets/attnlab.css"],
        "extra": {"generator": False},
        "validation": {"links": {"anchors": "warn", "unrecognized_links": "warn"}},
        "nav": nav,
    }


def prepare_docs(docs_src: Path, out_docs: Path) -> None:
    """Copy the hand-written tree into a fresh out_docs (only ever deleting a tree this code made)."""
    docs_src, out_docs = docs_src.resolve(), out_docs.resolve()
    if not docs_src.is_dir():
        raise AttnlabError(f"hand-written docs not found: {docs_src}")
    if out_docs == docs_src or docs_src in out_docs.parents or out_docs in docs_src.parents:
        raise AttnlabError(f"generated docs dir {out_docs} must lie outside {docs_src}")
    for js in VENDOR_JS:
        if not (docs_src / js).is_file():
            raise AttnlabError(f"vendored script missing: {docs_src / js}")
    if out_docs.exists():
        if any(out_docs.iterdir()) and not (out_docs / GENERATED_FLAG).exists():
            raise AttnlabError(f"refusing to overwrite {out_docs}: it was not generated by attnlab")
        shutil.rmtree(out_docs)
    shutil.copytree(docs_src, out_docs)
    (out_docs / GENERATED_FLAG).write_text("generated by attnlab.report.site; rebuilt on every run\n")


def build_site(results_dir: Path, claims_path: Path, config: dict, out_docs: Path, out_site: Path,
               strict: bool = True, docs_src: Path | None = None) -> Path:
    """Generate the pages into out_docs, write mkdocs.yml beside it, build into out_site; return the yml path."""
    results_dir, out_docs, out_site = (Path(p).resolve() for p in (results_dir, out_docs, out_site))
    registry = load_registry(claims_path)
    res = gather(results_dir)
    verdicts = evaluate_all(registry, res)
    site = Site(res, registry, verdicts, config)

    prepare_docs(Path(docs_src) if docs_src else DOCS_SRC, out_docs)
    for page, (_, builder) in PAGES.items():
        path = out_docs / page
        if not path.is_file():
            raise AttnlabError(f"page template missing: {path.name} in the hand-written docs")
        path.write_text(render(path.read_text(), page_blocks(site, builder), page, strict))
    downloads = out_docs / "downloads"
    downloads.mkdir(exist_ok=True)
    verdict_table(verdicts).to_csv(downloads / "claims.csv", index=False)
    tables.ladder_table(res, registry.reference).to_csv(downloads / "ladder.csv", index=False)

    yml = out_docs.parent / "mkdocs.yml"
    if yml.exists() and not yml.read_text().startswith("# generated by attnlab"):
        raise AttnlabError(f"refusing to overwrite {yml}: it was not generated by attnlab")
    pages = sorted(p.name for p in out_docs.glob("*.md"))
    building = out_site.with_name(out_site.name + ".building")  # swapped in whole once mkdocs succeeds
    shutil.rmtree(building, ignore_errors=True)
    yml.write_text("# generated by attnlab.report.site; do not edit\n"
                   + yaml.safe_dump(mkdocs_config(site, out_docs, building, pages), sort_keys=False,
                                    allow_unicode=True))
    cmd = [sys.executable, "-m", "mkdocs", "build", "--config-file", str(yml)]  # no --quiet: it hides warnings from --strict
    if strict:
        cmd.append("--strict")
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=yml.parent)
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-15:])
        raise AttnlabError(f"mkdocs build failed ({yml}):\n{tail}")
    swap_in(building, out_site)
    return yml


def swap_in(new: Path, dest: Path) -> None:
    """Replace folder `dest` by `new` with renames, so `dest` is never half old and half new."""
    old = dest.with_name(dest.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if dest.exists():
        dest.rename(old)
    new.rename(dest)
    shutil.rmtree(old, ignore_errors=True)
