"""A published version as a Workflow Run RO-Crate (https://w3id.org/ro/wfrun/workflow/0.5): ro-crate-metadata.json,
beside the version's files, says in a vocabulary other tools read what ran (the Snakefile of the runs' commit, the
main workflow), with what (the profile, config.yaml), what it made (every run file, curve and claims.csv), when,
on which hardware and with which software, all taken from the manifest. It lists every other file of the folder
with its sha256 and size, so `check_crate` notices a file added, removed or changed since the crate was written.

RO-Crate 1.1, the version the profile builds on; its context lacks `sha256`, which the crate defines as RO-Crate 1.2
does (schema.org's). The crate is written with the `rocrate` package and read back here as plain JSON, so that each
disagreement is one line of ours rather than a library's error.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

from attnlab.errors import AttnlabError
from attnlab.runfiles import read_json

CRATE = "ro-crate-metadata.json"
WORKFLOW = "Snakefile"  # the main workflow: publish copies it in (the profile wants it inside the crate)
OBJECT = "config.yaml"  # the profile the version ran: the workflow's one input
NOT_RESULTS = (CRATE, WORKFLOW, OBJECT, "manifest.json")  # every other file is something the run made
PROFILES = {"https://w3id.org/ro/wfrun/process/0.5": ("Process Run Crate", "0.5"),
            "https://w3id.org/ro/wfrun/workflow/0.5": ("Workflow Run Crate", "0.5"),
            "https://w3id.org/workflowhub/workflow-ro-crate/1.0": ("Workflow RO-Crate", "1.0")}
LICENSE = "none declared: the attnlab repository has no license file"  # the profile requires the field
FORMATS = {".json": "application/json", ".csv": "text/csv", ".yaml": "application/yaml"}
UNITS = {"mhz": "MHz", "c": "Cel", "w": "W"}  # a clock's unit from its name's suffix (provenance.gpu_clocks)


def published_only(manifest: dict) -> list[str] | None:
    """What a version was published `--only` with (experiments, or runs of one as `depth.E4-pre`); None for a
    complete one."""
    return None if manifest.get("complete", True) else manifest.get("only") or manifest.get("experiments") or []


def holding(manifest: dict) -> str:
    """What a partial version holds, in words: 'ladder, depth (runs E4-pre, E4-post)'."""
    runs: dict[str, list[str]] = {}
    for name in published_only(manifest) or []:
        experiment, _, run = name.partition(".")
        runs.setdefault(experiment, []).extend([run] if run else [])
    return ", ".join(e + (f" (runs {', '.join(r)})" if r else "") for e, r in runs.items())


def held(folder: Path) -> list[str]:
    """Every file of a version's folder but its crate, by its path relative to the folder: what the crate lists."""
    rels = (p.relative_to(folder).as_posix() for p in Path(folder).rglob("*") if p.is_file())
    return sorted(rel for rel in rels if rel != CRATE)


def digest(path: Path) -> tuple[str, str]:
    """(sha256, size in bytes as text, as schema.org's contentSize is)."""
    data = Path(path).read_bytes()
    return hashlib.sha256(data).hexdigest(), str(len(data))


def software(manifest: dict) -> list[tuple[str, str, str]]:
    """(name, version, what it is) for the Python and torch the runs record, attnlab at the runs' commit, and each
    other package the manifest names as installed where the version was published."""
    sw = manifest.get("software") or {}
    run = [(name, v, "as the run files record it") for name in ("python", "torch") for v in sw.get(name) or []]
    at_publish = [(name, v, "installed where the version was published (the run files do not record it)")
                  for name, v in sorted((sw.get("at_publish") or {}).items()) if v and name not in ("python", "torch")]
    return run + [("attnlab", manifest["commit"], "the commit the runs came from")] + at_publish


def properties(manifest: dict) -> list[dict]:
    """The hardware, each device and each GPU clock reading from the manifest, as PropertyValues (the profile has
    no term for them)."""
    out = [{"@id": "#hardware", "propertyID": "hardware", "value": manifest["hardware"]}]
    out += [{"@id": f"#device-{i}", "propertyID": "device", "value": d} for i, d in enumerate(manifest.get("devices") or [])]
    for rel, clocks in sorted((manifest.get("gpu_clocks") or {}).items()):
        for key, value in sorted(clocks.items()):
            unit = UNITS.get(key.rsplit("_", 1)[-1])
            out.append({"@id": f"#gpu-clocks/{rel}/{key}", "propertyID": f"gpu_clocks.{key}", "name": f"{key}, {rel}",
                        "value": value, **({"unitText": unit} if unit else {})})
    return [{"@type": "PropertyValue", **p} for p in out]


def write_crate(folder: Path, manifest: dict) -> Path:
    """Write `folder`/ro-crate-metadata.json for the version `manifest` describes, from the files the folder holds
    (its Snakefile included); the same folder and manifest always give the same bytes."""
    from rocrate.model.contextentity import ContextEntity
    from rocrate.rocrate import ROCrate

    folder = Path(folder)
    if not (folder / WORKFLOW).is_file():
        raise AttnlabError(f"version {manifest['version']} has no {WORKFLOW} ({folder / WORKFLOW}): the crate's main "
                           "workflow is the Snakefile of the runs' commit")
    crate = ROCrate(version="1.1")
    crate.metadata.extra_terms = {"sha256": "http://schema.org/sha256"}

    def add(props: dict):
        return crate.add(ContextEntity(crate, props.pop("@id"), properties=props))

    for url, (name, version) in PROFILES.items():
        add({"@id": url, "@type": "CreativeWork", "name": name, "version": version})
    what = "every experiment" if manifest.get("complete", True) else "only " + holding(manifest)
    for key, value in {
            "name": f"attnlab version {manifest['version']}",
            "description": f"The {manifest['profile']} profile of attnlab, {what}, run at commit {manifest['commit']} "
                           f"on {manifest['hardware']}: its files as `attnlab publish` froze them.",
            "identifier": manifest["version"], "datePublished": manifest["published"], "license": LICENSE,
            "conformsTo": [{"@id": url} for url in PROFILES]}.items():
        crate.root_dataset[key] = value
    apps = [add({"@id": f"#{name}-{version}", "@type": "SoftwareApplication", "name": name, "softwareVersion": version,
                 "description": why}) for name, version, why in software(manifest)]
    files = {}
    for rel in held(folder):
        sha, size = digest(folder / rel)
        props = {"name": rel, "sha256": sha, "contentSize": size,
                 **({"encodingFormat": FORMATS[Path(rel).suffix]} if Path(rel).suffix in FORMATS else {})}
        if rel == WORKFLOW:
            files[rel] = crate.add_workflow(folder / rel, rel, main=True, lang="snakemake", properties={
                **props, "version": manifest["commit"], "softwareRequirements": [{"@id": a.id} for a in apps],
                "description": "attnlab's Snakemake workflow as it stood at the runs' commit (it includes "
                               "workflow/rules/*.smk and imports the attnlab package of that commit)"})
        else:
            files[rel] = crate.add_file(folder / rel, rel, properties=props)
    runs = manifest.get("runs") or {}
    measured = [add(p) for p in properties(manifest)]
    times = {"startTime": runs.get("first_started"), "endTime": runs.get("last_finished")}  # the first run's start..
    action = crate.add_action(files[WORKFLOW], identifier="#run", object=[files[OBJECT]],
                              result=[f for rel, f in files.items() if rel not in NOT_RESULTS], properties={
        "name": f"snakemake run of profile {manifest['profile']} at commit {manifest['commit']}",
        **{key: value for key, value in times.items() if value},  # ..the last one's end (the manifest's runs)
        "actionStatus": {"@id": "http://schema.org/CompletedActionStatus"},
        "additionalProperty": [{"@id": p.id} for p in measured]})
    crate.root_dataset["mentions"] = [action]
    crate.metadata.write(folder)
    return folder / CRATE


def check_crate(folder: Path) -> dict:
    """The crate of a version's folder, read whole, once every file it lists is there with its sha256 and size and
    the folder holds no file it does not list; raises in one line naming the first disagreement."""
    folder = Path(folder)
    path = folder / CRATE
    if not path.is_file():
        raise AttnlabError(f"version {folder.name} has no RO-Crate: {path} is missing; restore it from git")
    doc = read_json(path, "RO-Crate")
    graph = doc.get("@graph")
    if not isinstance(graph, list) or not all(isinstance(e, dict) for e in graph):
        raise AttnlabError(f"RO-Crate {path} has no @graph of entities: it is not a whole crate")
    listed = {e.get("@id"): e for e in graph if "File" in ([e.get("@type")] if isinstance(e.get("@type"), str)
                                                         else e.get("@type") or [])}
    files = held(folder)
    missing, extra = sorted(set(listed) - set(files), key=str), sorted(set(files) - set(listed))
    if missing:
        raise AttnlabError(f"version {folder.name} is damaged: its RO-Crate {path} lists {folder / str(missing[0])}, "
                           f"which is missing{' (and more)' if len(missing) > 1 else ''}; restore it from git")
    if extra:
        raise AttnlabError(f"version {folder.name} holds {folder / extra[0]}, which its RO-Crate {path} does not list"
                           f"{' (and more)' if len(extra) > 1 else ''}: a published version gains no file; remove it")
    for rel in files:
        got, want = digest(folder / rel), (listed[rel].get("sha256"), listed[rel].get("contentSize"))
        if got != want:
            raise AttnlabError(f"version {folder.name} is damaged: {folder / rel} is not the file its RO-Crate {path} "
                               f"records (sha256 {got[0][:12]}…, {got[1]} bytes; recorded {str(want[0])[:12]}…, "
                               f"{want[1]} bytes); restore it from git")
    return doc
