"""A model is data: every variant of the chapter is one ModelSpec; S1's encoder-decoder (attnlab.nn.seq2seq) is
named here too. No torch: a profile's check reads these names."""
from __future__ import annotations

from dataclasses import asdict, dataclass

from attnlab.errors import AttnlabError

MIXERS = ("none", "average", "head", "multihead")  # what mixes information across positions
POSITIONS = ("none", "learned", "sinusoidal", "rope", "alibi")  # rope, alibi: options of the attention core
NORMS = ("none", "pre", "post")  # post: LN(x + f(x)) after each sublayer, no final LN
ATTENTIONS = ("full", "window", "favor")  # exact softmax, a sliding window (exact within it), FAVOR+ (S8)
# S1's recurrent encoder-decoder (Seq2SeqSpec in attnlab.nn.seq2seq): its cells, and each score in its paper's wiring
CELLS = ("gru", "lstm")
WIRINGS = {"none": None, "bahdanau": "bahdanau", "dot": "luong", "general": "luong", "concat": "luong"}
VARIANTS = tuple(WIRINGS)  # none: the fixed-vector bottleneck, no attention
APPROX_FIELDS = ("attention", "window", "n_global", "global_every", "features")  # not in to_dict() with full attention


@dataclass(frozen=True)
class ModelSpec:
    vocab_size: int = 1024
    d_model: int = 128
    context: int = 128
    n_blocks: int = 1
    mixer: str = "multihead"
    n_heads: int = 4      # 'head' is one head of width d_model with no output projection
    n_kv_heads: int | None = None  # key/value heads shared by groups of query heads (GQA; 1 is MQA); default n_heads
    residual: bool = True  # add the mixer's output to the stream, or replace the stream with it
    position: str = "learned"
    max_positions: int | None = None  # rows of a learned position table; defaults to context
    mlp: bool = True
    mlp_ratio: int = 4
    norm: str = "pre"
    d_k: int | None = None  # query/key width per head; defaults to d_model / heads
    scale: bool = True     # divide scores by sqrt(d_k)
    attention: str = "full"
    window: int | None = None  # window attention: the keys a query sees, itself included
    n_global: int = 0          # window attention: tokens at the start that every query sees
    global_every: int | None = None  # window attention: positions k-1, 2k-1, ... are global (see all before them)
    features: int | None = None  # FAVOR+: random features per layer
    bias: bool = True
    qkv_bias: bool | None = None  # biases on the q, k, v projections; defaults to `bias`
    tie_embeddings: bool = False  # output layer shares the token embedding (GPT-2), no output bias
    dropout: float = 0.0  # on attention weights, each sublayer's output, and the embedding sum

    def __post_init__(self):
        def bad(msg):
            raise AttnlabError(f"model spec: {msg}")

        if self.mixer not in MIXERS:
            bad(f"unknown mixer '{self.mixer}' (choose from {', '.join(MIXERS)})")
        if self.position not in POSITIONS:
            bad(f"unknown position encoding '{self.position}' (choose from {', '.join(POSITIONS)})")
        if self.norm not in NORMS:
            bad(f"unknown norm placement '{self.norm}' (choose from {', '.join(NORMS)})")
        if self.attention not in ATTENTIONS:
            bad(f"unknown attention '{self.attention}' (choose from {', '.join(ATTENTIONS)})")
        for name in ("vocab_size", "d_model", "context", "n_blocks", "n_heads", "n_kv_heads", "mlp_ratio", "d_k",
                     "window", "global_every", "features"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                bad(f"{name} must be a positive integer, got {value!r}")
        if isinstance(self.dropout, bool) or not isinstance(self.dropout, (int, float)) \
                or not 0 <= self.dropout < 1:
            bad(f"dropout must be a number in [0, 1), got {self.dropout!r}")
        if not isinstance(self.n_global, int) or isinstance(self.n_global, bool) or self.n_global < 0:
            bad(f"n_global must be a non-negative integer, got {self.n_global!r}")
        self.check_attention(bad)
        if self.position in ("rope", "alibi") and self.mixer in ("none", "average"):
            bad(f"position '{self.position}' needs a learned attention mixer (mixer is '{self.mixer}')")
        if self.position == "alibi" and self.heads & (self.heads - 1):  # Press et al.'s slopes: powers of two
            bad(f"ALiBi has no slopes for n_heads={self.heads} (use a power of two)")
        if self.position == "rope" and self.head_dim % 2:
            bad(f"RoPE needs an even query/key width per head, got {self.head_dim}")
        if self.mixer == "multihead" and self.d_model % self.n_heads:
            bad(f"n_heads={self.n_heads} does not divide d_model={self.d_model} (head width would not be whole)")
        if self.heads % self.kv_heads:
            bad(f"n_kv_heads={self.kv_heads} does not divide the {self.heads} query heads into equal groups")
        if self.position == "learned" and self.positions < self.context:
            bad(f"context {self.context} is longer than the position table ({self.positions} rows)")

    def check_attention(self, bad):
        """The approximations' settings go with their attention only, and only where there are learned scores."""
        needs = {"window": "window", "favor": "features"}.get(self.attention)
        if needs and getattr(self, needs) is None:
            bad(f"attention '{self.attention}' needs `{needs}`")
        for name, owner in (("window", "window"), ("n_global", "window"), ("global_every", "window"),
                            ("features", "favor")):
            if getattr(self, name) not in (None, 0) and self.attention != owner:
                bad(f"`{name}` is a setting of attention '{owner}' (attention is '{self.attention}')")
        if self.global_every is not None:
            if self.n_global:
                bad(f"global tokens are either the first n_global ({self.n_global}) or every global_every-th "
                    f"({self.global_every}): set one")
            if self.global_every < 2:  # above the context it is the window alone: no position is global
                bad(f"global_every must be 2 or more (1 makes every token global: full attention), "
                    f"got {self.global_every}")
        if self.attention != "full" and self.mixer in ("none", "average"):
            bad(f"attention '{self.attention}' needs a learned attention mixer (mixer is '{self.mixer}')")
        if self.attention == "favor" and self.position == "alibi":
            bad("FAVOR+ cannot use ALiBi: it never forms the scores that ALiBi's penalty is added to")
        if self.attention == "favor" and not self.scale:
            bad("FAVOR+ estimates softmax(q·k / sqrt(d_k)): it needs scale: true")

    @property
    def positions(self) -> int:
        return self.max_positions or self.context

    @property
    def heads(self) -> int:
        return 1 if self.mixer == "head" else self.n_heads

    @property
    def kv_heads(self) -> int:
        return self.n_kv_heads or self.heads

    def cache_bytes_per_token(self, bytes_per_value: int = 4) -> int:
        """What a KV cache holds per token: keys and values, every block, every key/value head."""
        value_dim = self.d_model // self.heads
        return self.n_blocks * self.kv_heads * (self.head_dim + value_dim) * bytes_per_value

    def training_floor(self) -> tuple[int, int]:
        """Lower bounds for training: (parameters, values autograd keeps for one window of `context` tokens).
        Counted from the big matrices only (no biases, norms or output projection), so real models hold more."""
        d, T, V = self.d_model, self.context, self.vocab_size
        attention = self.mixer in ("head", "multihead")
        hidden = self.mlp_ratio * d if self.mlp else 0
        block = 2 * hidden * d + (d * self.head_dim * (self.heads + self.kv_heads) if attention else 0)
        params = V * d * (1 if self.tie_embeddings else 2) + self.n_blocks * block
        params += self.positions * d if self.position == "learned" else 0
        scored = 2 * self.features if self.attention == "favor" else T  # FAVOR+ keeps features, not weights
        per_block = T * (d + hidden) + (self.heads * T * scored if attention else 0)  # the stream, MLP, attention
        return params, T * V + self.n_blocks * per_block

    @property
    def head_dim(self) -> int:
        """Query/key width of one head."""
        return self.d_k or self.d_model // self.heads

    def to_dict(self) -> dict:
        """The fields as a dict; with full attention the approximations' fields are left out, and global_every
        when unset, so the dicts of specs made before they existed (in run files, and hashed into run ids) are
        unchanged."""
        d = asdict(self)
        if self.attention == "full":
            return {k: v for k, v in d.items() if k not in APPROX_FIELDS}
        return {k: v for k, v in d.items() if k != "global_every" or v is not None}

