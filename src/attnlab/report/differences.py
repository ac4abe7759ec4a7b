"""The experiments whose settings differ between two profiles (versions.differences), in words: the home page lists
them between quick and chapter, the experiments the chapter's budget changes.
"""
from __future__ import annotations

import json

from attnlab import registry
from attnlab.config import load
from attnlab.versions import Difference, differences

BUDGET_PAIR = ("quick", "chapter")


def shown(value) -> str:
    """A setting's value, short: a long list by its ends and length; 'not set' for none."""
    if value is None:
        return "not set"
    if isinstance(value, list) and len(value) > 4:
        return f"[{shown(value[0])}, …, {shown(value[-1])}] ({len(value)})"
    return json.dumps(value, ensure_ascii=False) if isinstance(value, (dict, list, str)) else str(value)


def line(name: str, found: list[Difference]) -> str:
    """One experiment's line: each setting that differs, first profile's value → second's, grouped by setting."""
    parts: dict[str, list[str]] = {}
    for d in found:
        runs = f" ({', '.join(d.runs)})" if d.runs else ""
        parts.setdefault(d.setting, []).append(f"{shown(d.before)} → {shown(d.after)}{runs}")
    title = registry.get(name).title
    return f"- [{title}]({name}.md): " + "; ".join(f"`{k}` {', '.join(v)}" for k, v in parts.items())


def differences_text(before: dict, after: dict) -> str:
    """The list, one line per experiment whose settings differ (Markdown), with a sentence naming the two."""
    found = differences(before, after)
    names = (before["profile"], after["profile"])
    if not found:
        return f"The `{names[0]}` and `{names[1]}` profiles set every experiment alike.\n"
    lines = "\n".join(line(name, d) for name, d in found.items())
    return (f"The experiments whose settings differ between the `{names[0]}` and `{names[1]}` profiles "
            f"({len(found)} of {len(registry.load())}), from the two profile files as the plan reads them "
            f"(`{names[0]}` value → `{names[1]}` value; runs named where a setting differs for some only):\n\n"
            f"{lines}\n")


def budget_differences() -> str:
    """The list between quick and chapter, from config/quick.yaml and config/chapter.yaml of this checkout."""
    before, after = (load(registry.ROOT / "config" / f"{name}.yaml") for name in BUDGET_PAIR)
    return differences_text(before, after)
