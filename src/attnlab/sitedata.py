"""What a site shows, without its chrome: the run files, their verdicts, the profile, the versions beside them
and the seeds pooled with them (report/site.py's Site adds the stamp, the commands and the HTML blocks). No words:
it sits below the report, beside the versions and the pools it reads."""
from __future__ import annotations

from pathlib import Path

from attnlab import layout, registry, versions
from attnlab.config import load_settings, seeds as profile_seeds
from attnlab.claims.budget import largest
from attnlab.claims.registry import Registry, load_registry
from attnlab.claims.table import frozen_verdicts
from attnlab.pooling import design_seeds, pool
from attnlab.results import Results, gather
from attnlab.claims.design import first_look
from attnlab.claims.evaluate import evaluate_all
from attnlab.claims.verdicts import Verdict


class SiteData:
    """Everything the pages draw from: run files, verdicts, config, the published versions and the pools."""

    def __init__(self, res: Results, registry: Registry, verdicts: list[Verdict], config: dict,
                 manifest: dict | None = None, versions_root: Path | None = None, known: dict | None = None,
                 pool=None, folder: Path | None = None):
        self.res, self.registry, self.verdicts, self.config = res, registry, verdicts, config
        self.pool = pool  # a published version's pooling.Pool: its seeds and those pooled with it (None: live)
        self.folder = Path(folder) if folder else res.root  # the version's (or live results') own folder
        self.profile = config.get("profile") or "<profile>"
        self.manifest = manifest      # a published version's manifest; None for live results
        self.outdir = f"results/{self.profile}"  # where a run of the profile writes: the commands' targets
        self.rdir = f"results/{manifest['version']}" if manifest else self.outdir  # where these run files are
        self.versions_root = versions_root  # the folder whose results/ holds the published versions
        # other versions' verdicts, computed once; `known` shares them between the sites of one claims registry
        self._verdicts_of: dict[str, dict[str, Verdict]] = {} if known is None else known
        self._pools: dict = {}
        self._larger: dict | None = None
        self._frozen: dict | None = None

    @classmethod
    def load(cls, results: Path, claims: Path | None, settings: str | dict | None = None, **more):
        """The run files under `results`, their verdicts under the claims in `claims` (None: each experiment's
        own), and the profile (`settings`: a validated mapping, inline JSON, or a profile file; default: a version's
        own config.yaml, else config/<name of the results folder>.yaml); a published version with the seeds pooled
        with it. `more`: the subclass's own arguments."""
        if settings is None:
            own = Path(results) / "config.yaml"
            settings = versions.settings_of(own) if own.is_file() else f"config/{Path(results).name}.yaml"
        cfg = settings if isinstance(settings, dict) else load_settings(str(settings))
        claim_registry = load_registry(claims)
        root = Path(results).resolve().parent.parent  # results/<profile or version>/ -> the project holding them
        manifest = versions.manifest_of(results)
        found = pool(root, manifest["version"]) if manifest else None
        res = found.results if found else gather(results)
        return cls(res, claim_registry, evaluate_all(claim_registry, res, first_look(cfg, manifest)), cfg,
                   manifest=manifest, versions_root=root, pool=found, folder=Path(results), **more)

    def versions(self) -> list[dict]:
        """The manifest of every published version beside these results, newest first."""
        return versions.versions(self.versions_root) if self.versions_root else []

    def latest(self) -> str | None:
        """The version of record among them (results/LATEST, see versions.latest); None where none is published."""
        return versions.latest(self.versions_root) if self.versions_root else None

    def verdicts_of(self, version: str) -> dict[str, Verdict]:
        """Claim id -> its verdict in a published version, recomputed from that version's run files with today's
        claims registry (this site's own where it shows that version), computed once."""
        if self.manifest and version == self.manifest["version"]:
            return {v.claim.id: v for v in self.verdicts}
        if version not in self._verdicts_of:
            folder = self.versions_root / "results" / version
            manifest = next((m for m in self.versions() if m["version"] == version), None)
            found = evaluate_all(self.registry, self.pool_of(version).results,
                                 first_look(versions.settings_of(folder / "config.yaml"), manifest))
            self._verdicts_of[version] = {v.claim.id: v for v in found}
        return self._verdicts_of[version]

    def pool_of(self, version: str):
        """A published version's results with the seeds pooled with it (pooling.pool), computed once."""
        if self.pool is not None and version == self.pool.version:
            return self.pool
        if version not in self._pools:
            self._pools[version] = pool(self.versions_root, version, self.versions())
        return self._pools[version]

    def frozen(self) -> dict | None:
        """A published version's claims.csv as it was frozen when published (claim id -> claims.table.Frozen);
        None for live results and for a version published without one."""
        if self.manifest and self._frozen is None:
            self._frozen = frozen_verdicts(self.folder) or {}
        return self._frozen or None

    def larger(self) -> dict:
        """Claim id -> budget.Larger: each claim at the largest budget beyond the version of record's where a
        published version measured it, beside the record's verdict ({} where none is larger; see budget.py)."""
        if self._larger is None:
            found = largest([v.claim for v in self.verdicts], self.versions(), self.latest(),
                            lambda name: {k: v.verdict for k, v in self.verdicts_of(name).items()}, self.seeds_of)
            self._larger = {k: self.detailed(k, x) for k, x in found.items()}
        return self._larger

    def detailed(self, claim_id: str, x):
        """A claim at a larger budget with its value there and the versions and seeds pooled into it."""
        import dataclasses

        if x.verdict is None:
            return x
        v = self.verdicts_of(x.manifest["version"])[claim_id]
        shown = "; ".join(f"{p}: {t}" if p else t for p, t in v.shown().items())
        seeds = v.seed_count if getattr(v, "parts", None) else x.seeds
        found = self.pool_of(x.manifest["version"])
        members = found.behind(v.claim.experiment)
        # the seeds and versions behind this claim, not every run of its version
        return dataclasses.replace(x, shown=shown, pooled=found.words(v.claim.experiment), seeds=seeds,
                                   members=tuple(members) if len(members) > 1 else ())

    def seeds_of(self, version: str) -> int | None:
        """How many seeds a published version's verdicts rest on: the seeds its training runs' files are at, with
        those pooled with it (its config.yaml's list where it holds no training run)."""
        folder = self.versions_root / "results" / version
        held = seed_folders(self.pool_of(version).results)
        if held:
            return len(held)
        return len(profile_seeds(versions.settings_of(folder / "config.yaml"))) if (folder / "config.yaml").is_file() else None

    def held_seeds(self) -> list[int]:
        """The seeds these results' run files are at (training runs' seed folders, results holding values per
        seed); [] where none is."""
        held = {s for run in self.res.by_seed for s in self.res.seeds(run) if s is not None}
        return sorted(held | {s for what in self.res.files for s in self.res.seeded(what)})

    def seeds(self) -> list:
        """The seeds these results were trained at, from the run files present; the profile's list where no run
        file is at a seed."""
        return self.held_seeds() or profile_seeds(self.config)

    def page_verdicts(self, page: str | None) -> list[Verdict]:
        return [v for v in self.verdicts if page is None or v.claim.experiment == page]

    def files_of(self, names: list[str] | None) -> list[str]:
        """The run files (relative to the results folder) of these experiments, under the name a version
        published them under (the registry's `formerly`) too; None: of every experiment."""
        prov = self.res.provenance()
        if names is None:
            return list(prov)
        folders = {f for n in names for f in (n, registry.get(n).formerly) if f}
        return [f for f in prov if f.split("/")[1 if self.pool else 0] in folders]

    def claim_files(self, claim) -> list[str]:
        """The run files a claim reads (relative to the results folder): its result files, then its training runs'
        at every seed."""
        return [self.res.path(name) for name in sorted(claim.files)] + [
            f for run in sorted(claim.rows) for f in (self.res.seed_paths.get(run) or {run: self.res.path(run)}).values()]

    def unplanned(self, verdicts: list[Verdict]) -> tuple[str, ...]:
        """The experiments of these verdicts whose profile's file plans no second look (pooling.design_seeds)."""
        root = self.versions_root or registry.ROOT
        return tuple(e for e in dict.fromkeys(v.claim.experiment for v in verdicts)
                     if design_seeds(root, self.profile, e)[1] is None)

    def reads_elsewhere(self, claim) -> bool:
        """Whether a claim's verdict reads run files of versions other than this one (seeds pooled in, or an
        analysis's second look), which its published claims.csv could not."""
        if not (self.pool and self.manifest):
            return False
        own = f"{self.manifest['version']}/"
        return any(not f.startswith(own) for f in self.claim_files(claim))

    def pool_versions(self) -> list[str]:
        """The versions whose run files this site reads: its own, and those pooled with it."""
        return self.pool.versions() if self.pool else []

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


def seed_folders(res: Results) -> list[int]:
    """The seeds a results' training runs have seed<k>/ folders at (a version from before seeds kept one folder
    a run, its seed in the provenance: none)."""
    return sorted({s for paths in res.seed_paths.values() for s, p in paths.items() if layout.seed_of(p) is not None})
