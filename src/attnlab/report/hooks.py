"""The MkDocs hook (mkdocs.yml, `hooks:`): fills each page's <!-- attnlab:marker --> places from a results
folder while MkDocs builds, so `mkdocs build` and `mkdocs serve` work from the project root on any results.

What it reads, from the environment (`attnlab site` sets them; by hand only ATTNLAB_RESULTS is needed):
    ATTNLAB_RESULTS   the results folder (default results/quick)
    ATTNLAB_SETTINGS  the profile the report describes: inline JSON (what the rules pass) or a profile file
                      (default: a published version's own config.yaml, else config/<results folder name>.yaml)
    ATTNLAB_SELECTOR  set (by `attnlab versions`): the site is one of results' versions, side by side
    ATTNLAB_CLAIMS    a folder of claims files <experiment>.yaml (default: each experiment's own claims.yaml)
    ATTNLAB_DOCS      the hand-written pages (default: docs_dir of mkdocs.yml)
"""
from __future__ import annotations

import os
from pathlib import Path

from attnlab.report import build

SITE = None  # the context of the build under way


def on_config(config):
    global SITE
    results = Path(os.environ.get("ATTNLAB_RESULTS", "results/quick"))
    SITE = build.context(results, os.environ.get("ATTNLAB_CLAIMS") or None,
                         os.environ.get("ATTNLAB_SETTINGS") or None, selector=bool(os.environ.get("ATTNLAB_SELECTOR")))
    if os.environ.get("ATTNLAB_DOCS"):
        config["docs_dir"] = str(Path(os.environ["ATTNLAB_DOCS"]).resolve())
    config["site_name"] = f"attnlab · {SITE.profile}"
    config["nav"] = build.nav(Path(config["docs_dir"]))
    return config


def on_files(files, config):
    from mkdocs.structure.files import File

    for name, content in build.downloads(SITE).items():  # the CSV files the pages link to
        files.append(File.generated(config, f"downloads/{name}", content=content))
    for rel in SITE.res.provenance():  # a copy of every run file, which each claim links to
        files.append(File.generated(config, f"runs/{rel}", abs_src_path=str(SITE.res.root / rel)))
    for page, template in build.experiment_pages().items():  # an experiment's prose lives in its folder
        files.append(File.generated(config, page, content=template.read_text()))
    return files


def on_template_context(context, template_name, config):
    """The 404 page: MkDocs roots its links at the server ('/assets/…'), which from disk, or below a version's
    folder of `attnlab versions`, loads nothing (an unstyled page, console errors). Every page of the site sits at
    its top level, so paths relative to it load."""
    from mkdocs.utils import normalize_url

    if template_name == "404.html":
        context["base_url"] = "."
        context["extra_css"] = [normalize_url(str(p), None, ".") for p in config.extra_css]
        context["extra_javascript"] = [normalize_url(str(p), None, ".") for p in config.extra_javascript]
    return context


def on_page_markdown(markdown, page, config, files):
    name = page.file.src_uri
    text = build.render(markdown, build.page_blocks(SITE, name), name) if build.generated(name) else markdown
    return SITE.stamp(name) + "\n\n" + text
