"""E7: parameter accounting - models built from specs on the meta device and counted, beside the formula.

No training and no memory: `with torch.device("meta")` makes every parameter a shape without storage,
so GPT-2 small (124M parameters) is built and counted in well under a second. The counts come from the
modules the builder makes, never from the formula; the formula is only what they are checked against.

Output (results/<profile>/params/result.json):

    gpt2               C7.2: {spec, token_embeddings, position_embeddings, one_block, blocks, n_blocks,
                       final_norm, output_layer, total, published_total, block_formula,
                       token_embedding_share, embedding_share}
                       line items counted from the built model; output_layer is 0 because the output layer
                       shares the token table (tied); *_share = part / total (embedding = token + position)
    gpt2_no_qkv_bias   C7.3: {one_block, total} with biases dropped from the q, k, v projections
    qkv_bias_saving_per_block   gpt2 one_block - gpt2_no_qkv_bias one_block (3d = 2,304 at d = 768)
    per_block          C7.1, one row per width: {d, counted, formula, attention, attention_formula, mlp,
                       mlp_formula, norms, matches}; formula = 12d^2 + 13d, attention 4d^2 + 4d,
                       MLP 8d^2 + 5d, two LayerNorms 4d
    shares             one row per width of the one-block chapter model (vocab 1024, context 128, untied
                       output): {d, total, mlp_share, embedding_share, output_share}; mlp_share =
                       MLP / (attention + MLP) of the block (C2.10 across widths), embedding_share =
                       token table / whole model, output_share = output layer / whole model
    widths, width_spec, all_on_meta, provenance
"""
from __future__ import annotations

from dataclasses import replace

import torch

from attnlab.nn.model import build, param_breakdown
from attnlab.nn.spec import ModelSpec

GPT2_SMALL = ModelSpec(vocab_size=50257, d_model=768, context=1024, n_blocks=12, mixer="multihead", n_heads=12,
                       position="learned", mlp=True, norm="pre", tie_embeddings=True)
GPT2_PUBLISHED = 124_439_808
WIDTHS = [64, 128, 256, 512, 768, 1024]
# the chapter's one-block model (ladder rung L9) at other widths; heads do not change the count
WIDTH_SPEC = ModelSpec(vocab_size=1024, d_model=128, context=128, n_blocks=1, mixer="multihead", n_heads=4,
                       position="learned", mlp=True, norm="pre")


def block_formula(d: int) -> int:
    """Attention 4d^2 + 4d (four biased projections) + MLP 8d^2 + 5d + two LayerNorms 4d."""
    return 12 * d * d + 13 * d


def on_meta(spec: ModelSpec):
    """The model of `spec` with every parameter on the meta device (shapes only, no storage)."""
    with torch.device("meta"):
        return build(spec)


def count(module: torch.nn.Module | None) -> int:
    """Distinct parameters of a module: a tied tensor counts once."""
    return 0 if module is None else sum(p.numel() for p in module.parameters())


def all_meta(model: torch.nn.Module) -> bool:
    return all(p.is_meta for p in model.parameters())


def gpt2(spec: ModelSpec = GPT2_SMALL) -> dict:
    """C7.2: GPT-2 small's line items, counted from the built model."""
    model = on_meta(spec)
    parts = param_breakdown(model)
    items = {
        "token_embeddings": count(model.tok),
        "position_embeddings": count(model.pos),
        "one_block": count(model.blocks[0]),
        "blocks": sum(count(b) for b in model.blocks),
        "n_blocks": len(model.blocks),
        "final_norm": count(model.norm),
        "output_layer": parts["head"],  # 0 when tied: the weight is the token table, already counted
        "total": count(model),
    }
    return {"spec": spec.to_dict(), **items, "published_total": GPT2_PUBLISHED,
            "block_formula": block_formula(spec.d_model),
            "token_embedding_share": items["token_embeddings"] / items["total"],
            "embedding_share": (items["token_embeddings"] + items["position_embeddings"]) / items["total"],
            "on_meta": all_meta(model)}


def block_row(d: int, spec: ModelSpec = WIDTH_SPEC) -> dict:
    """C7.1: one block of width d, counted by part, beside the formula."""
    block = on_meta(replace(spec, d_model=d)).blocks[0]
    counted = {"attention": count(block.mixer), "mlp": count(block.mlp),
               "norms": count(block.norm1) + count(block.norm2)}
    total = count(block)
    return {"d": d, "counted": total, "formula": block_formula(d),
            "attention": counted["attention"], "attention_formula": 4 * d * d + 4 * d,
            "mlp": counted["mlp"], "mlp_formula": 8 * d * d + 5 * d, "norms": counted["norms"],
            "matches": total == block_formula(d) and counted["attention"] == 4 * d * d + 4 * d
            and counted["mlp"] == 8 * d * d + 5 * d and counted["norms"] == 4 * d}


def share_row(d: int, spec: ModelSpec = WIDTH_SPEC) -> dict:
    """Where the parameters of the one-block model of width d sit."""
    model = on_meta(replace(spec, d_model=d))
    parts = param_breakdown(model)
    total = count(model)
    return {"d": d, "total": total, "mlp_share": parts["mlp"] / (parts["mlp"] + parts["mixer"]),
            "embedding_share": parts["embedding"] / total, "output_share": parts["head"] / total,
            "breakdown": parts}


def run(widths=WIDTHS) -> dict:
    small = gpt2()
    no_bias = on_meta(replace(GPT2_SMALL, qkv_bias=False))
    lean = {"one_block": count(no_bias.blocks[0]), "total": count(no_bias)}
    return {
        "gpt2": small,
        "gpt2_no_qkv_bias": lean,
        "qkv_bias_saving_per_block": small["one_block"] - lean["one_block"],
        "per_block": [block_row(d) for d in widths],
        "shares": [share_row(d) for d in widths],
        "widths": list(widths),
        "width_spec": WIDTH_SPEC.to_dict(),
        "all_on_meta": small["on_meta"] and all_meta(no_bias),
        "method": ("Every model is built by attnlab.nn.model.build from its ModelSpec inside "
                   "`with torch.device('meta')` and counted with sum(p.numel() for p in module.parameters()), "
                   "which counts a tied tensor once. Widths use the chapter's one-block model (vocabulary 1024, "
                   "context 128, 4 heads, 4x MLP, pre-norm, learned positions, untied output) with only "
                   "d_model changed."),
    }


def main(cfg: dict, out_path) -> dict:
    from attnlab import provenance

    return provenance.measured(cfg, out_path, lambda: run())
