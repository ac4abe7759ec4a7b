"""Checks of the benchmark sections that need no torch, so the Snakefile can run them before any job."""
from __future__ import annotations

from attnlab.errors import AttnlabError

COST_METHODS = ("naive", "sdpa", "tiled", "window", "favor")  # exact, exact, exact; S8's two approximations


def check_cost(s: dict, on_cpu: bool) -> None:
    """E6/S7's sweep (the `cost` section, defaults filled): one line naming the first bad value."""
    sizes = s["sizes"]
    if any(b <= a for a, b in zip(sizes, sizes[1:])):
        raise AttnlabError(f"config error at 'cost.sizes': sizes must increase, got {sizes}")
    if s["d_model"] % s["heads"]:
        raise AttnlabError(f"config error at 'cost.heads': {s['heads']} heads do not divide "
                           f"cost.d_model={s['d_model']}")
    unknown = [m for m in s["methods"] if m not in COST_METHODS]
    if unknown:
        raise AttnlabError(f"config error at 'cost.methods': unknown method '{unknown[0]}' "
                           f"(known: {', '.join(COST_METHODS)})")
    for key in ("window", "features"):
        values = [s[key]] + list(s["errors"][f"{key}s" if key == "window" else key])
        if min(values) < 1:
            raise AttnlabError(f"config error at 'cost.{key}': a {key} below 1 ({min(values)}) attends to nothing")
    if on_cpu and sizes[-1] > s["max_n_cpu"]:
        raise AttnlabError(f"config error at 'cost.sizes': n={sizes[-1]} is above cost.max_n_cpu={s['max_n_cpu']},"
                           " the largest n run on a CPU")


def check_decode(s: dict) -> None:
    """S5/S6's decoding (the `decode` section, defaults filled): increasing lengths, and every model and
    key/value head count a valid spec."""
    from attnlab.nn.spec import ModelSpec

    if any(b <= a for a, b in zip(s["lengths"], s["lengths"][1:])):
        raise AttnlabError(f"config error at 'decode.lengths': lengths must increase, got {s['lengths']}")
    for name in s["kv_heads"]:
        if name not in s["models"]:
            raise AttnlabError(f"config error at 'decode.kv_heads.{name}': no model '{name}' in decode.models")
    for name, model in s["models"].items():
        for kv in s["kv_heads"].get(name) or [None]:
            try:
                ModelSpec(**{"position": "rope", **model, "n_kv_heads": kv})
            except (AttnlabError, TypeError) as err:
                raise AttnlabError(f"config error at 'decode.models.{name}': {err}") from None
