from pathlib import Path

ENV = "../../environment.yml"


def uses_gpu():
    if config["device"] == "auto":
        import torch

        return torch.cuda.is_available()
    return config["device"] == "cuda"


GPU = 1 if uses_gpu() else 0


def code(*patterns):
    """Source files a rule's work depends on: editing them reruns that rule, and only that rule."""
    return sorted(str(p) for pattern in patterns for p in Path("src/attnlab").glob(pattern))


def parent_of(kind, name):
    """A param: the folder holding one of the rule's inputs or outputs (kind 'input' or 'output')."""

    def param(wildcards, input, output):
        return str(Path(getattr(input if kind == "input" else output, name)).parent)

    return param
