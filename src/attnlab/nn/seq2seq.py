"""S1's encoder-decoder (attnlab.experiments.seq2seq trains and reads it): a recurrent encoder and decoder that
differ only in the decoder's context vector, the encoder's last state (none) or an attention over every encoder
state with one of four scores.

    encoder          e_1 ... e_S: a GRU or LSTM over the source; by default both ways (Bahdanau's), brought to d
    decoder state    h_t = RNN(embed(y_{t-1}), h_{t-1})      h_0 from the encoder's final state(s) only
    context          c_t = the encoder's last state (none)  |  sum_j softmax_j(score(h_t, e_j)) e_j (the rest)
    output           logits_t = W_out tanh(W_c [c_t; h_t])

What is here:
    Dot, General, Additive, Concat   the score functions: (B, T, d) queries, (B, S, d) keys -> (B, T, S)
    Seq2SeqSpec      a model as data (build() -> Seq2Seq); attnlab.train.train trains it on rows
    Seq2Seq          forward(idx, targets) as the project's LMs: loss over the target positions only
    greedy           greedy decoding of the target from the source, with the attention weights
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from attnlab.errors import AttnlabError
from attnlab.settings.seq2seq import CELLS, VARIANTS

# ----------------------------------------------------------------------------- scores

class Dot(nn.Module):
    """Luong's dot: h . e"""

    def forward(self, q, k):  # (B, T, d), (B, S, d) -> (B, T, S)
        return q @ k.transpose(1, 2)


class General(nn.Module):
    """Luong's general: h . (W e)"""

    def __init__(self, d: int):
        super().__init__()
        self.W = nn.Linear(d, d, bias=False)

    def forward(self, q, k):
        return q @ self.W(k).transpose(1, 2)


class Additive(nn.Module):
    """Bahdanau's additive: v . tanh(W1 h + W2 e)"""

    def __init__(self, d: int):
        super().__init__()
        self.W1 = nn.Linear(d, d, bias=False)
        self.W2 = nn.Linear(d, d, bias=False)
        self.v = nn.Linear(d, 1, bias=False)

    def forward(self, q, k):
        hidden = torch.tanh(self.W1(q)[:, :, None] + self.W2(k)[:, None])  # (B, T, S, d)
        return self.v(hidden).squeeze(-1)


class Concat(nn.Module):
    """Luong's concat: v . tanh(W [h; e])"""

    def __init__(self, d: int):
        super().__init__()
        self.W = nn.Linear(2 * d, d, bias=False)
        self.v = nn.Linear(d, 1, bias=False)

    def forward(self, q, k):
        # W [h; e] = W_h h + W_e e: the same number, without building every (h, e) pair (B, T, S, 2d)
        W_h, W_e = self.W.weight.split(q.size(-1), dim=1)  # (d, d) each
        hidden = torch.tanh((q @ W_h.T)[:, :, None] + (k @ W_e.T)[:, None])  # (B, T, S, d)
        return self.v(hidden).squeeze(-1)


SCORES = {"bahdanau": Additive, "dot": lambda d: Dot(), "general": General, "concat": Concat}


# ----------------------------------------------------------------------------- model

@dataclass(frozen=True)
class Seq2SeqSpec:
    vocab_size: int = 16     # symbols; SEP is id vocab_size, so the model reads and writes vocab_size + 1 ids
    source_length: int = 8
    cell: str = "gru"
    score: str = "bahdanau"  # 'none' (the last encoder state only) or one of SCORES
    d_model: int = 32
    bidirectional: bool = True  # Bahdanau's encoder, both ways; False: Sutskever's, Cho's and Luong's, forward only

    def __post_init__(self):
        def bad(msg):
            raise AttnlabError(f"seq2seq spec: {msg}")

        if self.cell not in CELLS:
            bad(f"unknown cell {self.cell!r} (choose from {', '.join(CELLS)})")
        if self.score not in VARIANTS:
            bad(f"unknown score {self.score!r} (choose from {', '.join(VARIANTS)})")
        for name in ("source_length", "d_model"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                bad(f"{name} must be a positive integer, got {value!r}")
        if isinstance(self.vocab_size, bool) or not isinstance(self.vocab_size, int) or self.vocab_size < 2:
            bad(f"vocab_size must be at least 2 symbols, got {self.vocab_size!r}")
        if not isinstance(self.bidirectional, bool):
            bad(f"bidirectional must be true or false, got {self.bidirectional!r}")

    @property
    def context(self) -> int:  # what train() reads: a row minus its last token
        return 2 * self.source_length

    @property
    def n_tokens(self) -> int:
        return self.vocab_size + 1

    @property
    def sep(self) -> int:
        return self.vocab_size

    def to_dict(self) -> dict:
        return asdict(self)

    def build(self) -> "Seq2Seq":
        return Seq2Seq(self)


class Seq2Seq(nn.Module):
    def __init__(self, spec: Seq2SeqSpec):
        super().__init__()
        self.spec = spec
        d, V = spec.d_model, spec.n_tokens
        rnn = nn.GRU if spec.cell == "gru" else nn.LSTM
        self.emb = nn.Embedding(V, d)  # shared by encoder and decoder
        self.encoder = rnn(d, d, batch_first=True, bidirectional=spec.bidirectional)
        self.bridge = nn.Linear(2 * d, d) if spec.bidirectional else None  # [forward; backward] -> d
        self.decoder = rnn(d, d, batch_first=True)
        self.score = None if spec.score == "none" else SCORES[spec.score](d)
        self.combine = nn.Linear(2 * d, d)  # Luong's attentional state tanh(W_c [c; h])
        self.head = nn.Linear(d, V)

    def encode(self, src):
        """src (B, S) -> memory (B, S, d): every encoder state; last (B, d): the encoder's last state, the fixed
        vector; state: the decoder's initial RNN state, made from the encoder's final state only."""
        out, final = self.encoder(self.emb(src))  # (B, S, d or 2d)
        h = final[0] if isinstance(final, tuple) else final  # (directions, B, d)
        if self.bridge is None:
            return out, h[-1], final
        # both directions' final states (the forward one after the last token, the backward one after the first)
        memory = torch.tanh(self.bridge(out))  # (B, S, d)
        last = torch.tanh(self.bridge(torch.cat([h[0], h[1]], dim=-1)))  # (B, d)
        state = last[None] if self.spec.cell == "gru" else (last[None], torch.zeros_like(last[None]))
        return memory, last, state

    def decode(self, memory, last, dec_in, state):
        """memory (B, S, d), last (B, d), dec_in (B, T), state: the decoder's RNN state
        -> logits (B, T, V), weights (B, T, S) (None for 'none'), the new state.

        'none' reads only `last`: memory does not enter its computation at all.
        """
        h, state = self.decoder(self.emb(dec_in), state)  # (B, T, d)
        if self.score is None:
            weights = None
            ctx = last[:, None].expand_as(h)  # (B, T, d): the same fixed vector at every step
        else:
            weights = F.softmax(self.score(h, memory), dim=-1)  # (B, T, S)
            ctx = weights @ memory  # (B, T, d)
        logits = self.head(torch.tanh(self.combine(torch.cat([ctx, h], dim=-1))))  # (B, T, V)
        return logits, weights, state

    def forward(self, idx, targets=None):
        """idx: a row minus its last token (B, 2S): [source, SEP, target[:-1]] (teacher forcing);
        targets: a row minus its first. -> logits (B, 2S, V), zero before SEP, and the mean cross-entropy over
        the S target positions only (the source cannot be predicted, so it is not scored)."""
        S = self.spec.source_length
        if idx.size(1) != 2 * S:
            raise AttnlabError(f"seq2seq: rows of {idx.size(1) + 1} tokens do not fit source length {S} "
                               f"(a row is 2S + 1 = {2 * S + 1} tokens)")
        memory, last, state = self.encode(idx[:, :S])
        out, _, _ = self.decode(memory, last, idx[:, S:], state)  # (B, S, V)
        logits = torch.cat([out.new_zeros(out.shape), out], dim=1)  # (B, 2S, V)
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(out.flatten(0, 1), targets[:, S:].flatten())


# ----------------------------------------------------------------------------- decoding

@torch.no_grad()
def greedy(model: Seq2Seq, src: torch.Tensor):
    """Greedy decoding of S tokens from src (B, S) -> tokens (B, S), weights (B, S, S) (None for 'none')."""
    was_training = model.training
    model.eval()
    memory, last, state = model.encode(src)
    tok = torch.full((src.size(0), 1), model.spec.sep, dtype=torch.long, device=src.device)
    out, weights = [], []
    for _ in range(src.size(1)):
        logits, w, state = model.decode(memory, last, tok, state)
        tok = logits[:, -1].argmax(-1, keepdim=True)  # (B, 1)
        out.append(tok)
        weights.append(w)
    model.train(was_training)
    return torch.cat(out, 1), None if weights[0] is None else torch.cat(weights, 1)
