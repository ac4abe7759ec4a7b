"""Build the site: hand-written page templates + generated blocks -> markdown -> mkdocs build --strict.

The hand-written pages in docs/ carry the prose. Wherever a page says
`<!-- attnlab:NAME -->`, its page module (attnlab.report.pages.<page>) puts a
generated block (a table, a chart, the verdicts, the rerun command, the
provenance of the run files). A page whose inputs are missing still renders:
its blocks say "not run". The pages are the overview, one per experiment in
the registry, and the static ones. MkDocs runs with the project's mkdocs.yml;
its hook (report/hooks.py) calls `context`, `nav`, `render` and `downloads`.
"""
from __future__ import annotations

import html
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from attnlab import registry, versions
from attnlab.claims.table import seed_table, verdict_table
from attnlab.config import canonical
from attnlab.errors import AttnlabError
from attnlab.report.site import NOT_RUN, Site

MKDOCS = registry.ROOT / "mkdocs.yml"  # the project's site configuration; its hook calls back in here
DOCS = registry.ROOT / "docs"  # the site's own pages (an experiment's page.md lives in its folder)
MARKER = re.compile(r"<!--\s*attnlab:(\w+)\s*-->")
VENDOR_JS = ["assets/vendor/vega.min.js", "assets/vendor/vega-lite.min.js", "assets/vendor/vega-embed.min.js"]
CHARTS_JS = "assets/attnlab-charts.js"  # fits every chart to its box, its text unscaled (wraps vegaEmbed)
VIEWER_ASSETS = ["assets/attnlab-viewer.js", "assets/attnlab-viewer.css"]  # draw the attention viewers (viewer_widget)
STATIC_PAGES = {"about.md": "How verdicts work"}


def pages() -> dict[str, str]:
    """Generated page -> nav title: the overview, every experiment in registry order, the comparison."""
    return {f"{name}.md": title for name, title in registry.pages().items()}


def generated(page: str) -> bool:
    """Pages whose <!-- attnlab:... --> markers a page module fills: every page but the purely static ones."""
    return page in pages() or page in STATIC_PAGES


def page_module(page: str):
    return importlib.import_module(registry.page_module(page.removesuffix(".md")))


def page_blocks(site: Site, page: str) -> dict[str, str]:
    return page_module(page).blocks(site)


def template(page: str, docs: Path = DOCS) -> Path:
    """The prose of a page ('ladder.md'): an experiment's page.md, else the site's own page in `docs`."""
    return registry.template(page.removesuffix(".md"), docs)


def experiment_pages() -> dict[str, Path]:
    """The pages whose prose lives in an experiment's folder (page.md), not in docs/: page -> template."""
    return {f"{e.name}.md": e.template for e in registry.load()}


def render(template: str, blocks: dict[str, str], page: str, strict: bool = True) -> str:
    if NOT_RUN in blocks:
        blocks = fill_not_run(template, blocks)

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


def fill_not_run(template: str, blocks: dict[str, str]) -> dict[str, str]:
    """The blocks of a page whose result is missing, every marker of its template filled: those the page gave,
    `settings` and any other marker inside a sentence "_not run_", the first marker on a line of its own the
    not-run warning (blocks[NOT_RUN], from Site.skeleton), the rest empty."""
    out, warned = dict(blocks), False
    for m in MARKER.finditer(template):
        name = m.group(1)
        if name in out:
            continue
        line_start = template.rfind("\n", 0, m.start()) + 1
        line_end = template.find("\n", m.end())
        alone = not (template[line_start:m.start()] + template[m.end():line_end if line_end >= 0 else None]).strip()
        if name == "settings" or not alone:
            out[name] = "_not run_"
        else:
            out[name], warned = ("" if warned else blocks[NOT_RUN]), True
    return out


def context(results: Path, claims: Path | None, settings: str | dict | None = None, selector: bool = False,
            known: dict | None = None) -> Site:
    """Everything the pages draw from (SiteData.load: the run files under `results`, their verdicts, and the
    profile `settings`), with the site's own commit. `selector`: the site is one of a tree of versions. `known`:
    other versions' verdicts (version -> claim id -> Verdict) under the same claims, shared between sites."""
    return Site.load(results, claims, settings, built_from=versions.head(registry.ROOT), selector=selector,
                     known=known)


def nav(docs: Path) -> list[dict]:
    """The navigation: every generated page (each must have its template in `docs`), then the static ones."""
    for page in pages():
        if not registry.template(page.removesuffix(".md"), docs).is_file():
            raise AttnlabError(f"page template missing: {registry.template(page.removesuffix('.md'), docs)}")
    for asset in [*VENDOR_JS, CHARTS_JS, *VIEWER_ASSETS]:
        if not (docs / asset).is_file():
            raise AttnlabError(f"site asset missing: {docs / asset}")
    return [{title: page} for page, title in {**pages(), **STATIC_PAGES}.items()
            if page in experiment_pages() or (docs / page).is_file()]


def downloads(site: Site) -> dict[str, str]:
    """The verdicts and the pages' own tables as CSV files (name -> text) beside the pages, and a published
    version's manifest as it was written (every page's stamp links it and claims.csv)."""
    out = {"claims.csv": verdict_table(site.verdicts).to_csv(index=False),
           "claims_by_seed.csv": seed_table(site.verdicts).to_csv(index=False)}
    for page in pages():  # a page's own tables, where its module offers them
        out |= getattr(page_module(page), "downloads", lambda _: {})(site)
    if site.manifest:
        out["manifest.json"] = (site.folder / versions.MANIFEST).read_text()
    if site.frozen() is not None:  # beside today's verdicts, the ones it was published with
        out["claims-published.csv"] = (site.folder / "claims.csv").read_text()
    return out


def build_versions(claims_path: Path | None, out_site: Path, root: Path = registry.ROOT) -> list[str]:
    """The site of every published version under root/results/, each in out_site/<version>/ with a selector
    between them (relative links: it works opened from disk); out_site/latest/, as `mike` names it, leads each
    page to the same page of the version of record (results/LATEST), and out_site/index.html to its home page.
    Reads only the versions' run files: nothing is trained. Every version is checked first: a damaged one stops
    the build, in one line naming the file, before any site is built."""
    names = [m["version"] for m in versions.versions(root)]
    for name in names:
        versions.check_version(Path(root) / "results" / name)
    if not names:
        raise AttnlabError(f"no published version under {Path(root) / 'results'}: `attnlab publish` makes one")
    record = versions.latest(root)
    out_site = Path(out_site)
    out_site.mkdir(parents=True, exist_ok=True)
    for name in names:
        build_site(Path(root) / "results" / name, claims_path, None, out_site / name, selector=True)
    alias(out_site, record)
    history_page(out_site, Path(root), claims_path, record)
    (out_site / "index.html").write_text(
        redirect(f"{versions.ALIAS}/index.html", "attnlab versions")
        + f'<p>The version of record: <a href="{record}/index.html">{record}</a>. Every version: '
        + ", ".join(f'<a href="{n}/index.html">{n}</a>' for n in names) + "</p>\n")
    return names


def history_page(out_site: Path, root: Path, claims_path: Path | None, record: str) -> None:
    """out_site/history/: every claim across the versions, each version read with today's claims (once)."""
    from attnlab.claims.registry import load_registry
    from attnlab.report.history_page import build_history
    from attnlab.sitedata import SiteData

    reg = load_registry(claims_path)
    data = SiteData(None, reg, [], {}, versions_root=root, folder=root)
    build_history(out_site, root, reg.claims, data.verdicts_of, record)


def redirect(url: str, title: str) -> str:
    """The head of a page that opens `url` at once, keeping the #anchor it was opened with (a link to
    latest/<page>.html#claim-C2-1 lands on that claim); without scripts, a plain refresh."""
    return (f'<!doctype html><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f"<script>location.replace({json.dumps(url)} + location.hash)</script>"
            f'<noscript><meta http-equiv="refresh" content="0; url={html.escape(url)}"></noscript>')


def alias(out_site: Path, version: str) -> None:
    """out_site/latest/: for every page of `version`'s site, a page that leads to it (a link or a bookmark to
    latest/ follows the version of record wherever results/LATEST moves it)."""
    folder = out_site / versions.ALIAS
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    for page in sorted((out_site / version).glob("*.html")):
        (folder / page.name).write_text(
            redirect(f"../{version}/{page.name}", f"attnlab · {version}")
            + f'<p>The version of record is <a href="../{version}/{page.name}">{version}</a>.</p>\n')


def build_site(results_dir: Path, claims_path: Path | None, settings: dict | None, out_site: Path, strict: bool = True,
               docs_src: Path | None = None, selector: bool = False) -> None:
    """`mkdocs build` with the project's mkdocs.yml over `results_dir`, into out_site (swapped in whole)."""
    out_site = Path(out_site).resolve()
    building = out_site.with_name(out_site.name + ".building")
    shutil.rmtree(building, ignore_errors=True)
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "ATTNLAB_RESULTS": str(Path(results_dir).resolve()),
           "ATTNLAB_CLAIMS": str(Path(claims_path).resolve()) if claims_path else "", "ATTNLAB_SETTINGS": canonical(settings) if settings else "",
           "ATTNLAB_SELECTOR": "1" if selector else ""}
    if docs_src:
        env["ATTNLAB_DOCS"] = str(Path(docs_src).resolve())
    cmd = [sys.executable, "-m", "mkdocs", "build", "--config-file", str(MKDOCS), "--site-dir", str(building)]
    if strict:  # no --quiet: it hides the warnings --strict fails on
        cmd.append("--strict")
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=MKDOCS.parent, env=env)
    if done.returncode != 0:
        shutil.rmtree(building, ignore_errors=True)
        lines = (done.stderr or done.stdout).strip().splitlines()
        ours = [line.split("AttnlabError: ", 1)[1] for line in lines if "AttnlabError: " in line]
        if ours:
            raise AttnlabError(ours[-1])
        problems = [line for line in lines if line.startswith(("WARNING", "ERROR"))] or lines[-15:]
        raise AttnlabError(f"mkdocs build failed: {problems[0] if problems else 'no output'}\n"
                           + "\n".join(problems[1:]) + f"\n(config {MKDOCS})")
    swap_in(building, out_site)


def swap_in(new: Path, dest: Path) -> None:
    """Replace folder `dest` by `new` with renames, so `dest` is never half old and half new."""
    old = dest.with_name(dest.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if dest.exists():
        dest.rename(old)
    new.rename(dest)
    shutil.rmtree(old, ignore_errors=True)
