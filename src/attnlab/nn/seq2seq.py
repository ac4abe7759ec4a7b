"""S1's encoder-decoder (attnlab.experiments.seq2seq.producer trains and reads it): a recurrent encoder and decoder with
no attention (the fixed vector) or attention in one of the two papers' wirings.

    encoder      a GRU or LSTM over the source; by default both ways: annotation e_j = [forward_j; backward_j]

    none         s_t = RNN(E y_{t-1}, s_{t-1}), s_0 from the encoder's final state(s); c_t = the encoder's last
                 state at every step; logits_t = W_out tanh(W_c [c_t; s_t])
    Bahdanau     (Bahdanau, Cho & Bengio 2015, appendix A) the score reads the PREVIOUS state, the context is an
                 input of the recurrence:
                     a_t = softmax_j(v . tanh(W s_{t-1} + U e_j))      e_j: both directions, 2d wide
                     c_t = sum_j a_tj e_j
                     s_t = RNN([E y_{t-1}; c_t], s_{t-1})             s_0 = tanh(W_s backward_1)
                     logits_t = W_o maxout(U_o s_t + V_o E y_{t-1} + C_o c_t)   (deep output, pools of 2)
    Luong        (Luong, Pham & Manning 2015) the score reads the CURRENT state, the context joins after the RNN:
                     s_t = RNN([E y_{t-1}; h~_{t-1}], s_{t-1})   with input feeding (h~_0 = 0), else RNN(E y_{t-1})
                     a_t = softmax_j(score(s_t, e_j))   dot, general or concat; two-way e_j brought to d: tanh(W e_j)
                     h~_t = tanh(W_c [c_t; s_t]),  logits_t = W_out h~_t

Without input feeding Luong's decoder runs over all steps at once; Bahdanau's and input feeding step by step.

What is here:
    Dot, General, Additive, Concat   the score functions: (B, T, dq) queries, (B, S, dk) keys -> (B, T, S)
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
from attnlab.nn.spec import CELLS, VARIANTS, WIRINGS

# ----------------------------------------------------------------------------- scores
# score(q, k) = match(q, keys(k)): the part that reads only the keys is computed once per source, not per step

class Score(nn.Module):
    def keys(self, k):  # (B, S, dk) -> what match reads of them
        return k

    def forward(self, q, k):  # (B, T, dq), (B, S, dk) -> (B, T, S)
        return self.match(q, self.keys(k))


class Dot(Score):
    """Luong's dot: h . e"""

    def match(self, q, k):
        return q @ k.transpose(1, 2)


class General(Score):
    """Luong's general: h . (W e)"""

    def __init__(self, d: int):
        super().__init__()
        self.W = nn.Linear(d, d, bias=False)

    def keys(self, k):
        return self.W(k)

    def match(self, q, k):
        return q @ k.transpose(1, 2)


class Additive(Score):
    """Bahdanau's additive: v . tanh(W1 h + W2 e); keys may be wider than queries (his annotations are 2d)."""

    def __init__(self, d: int, d_key: int | None = None):
        super().__init__()
        self.W1 = nn.Linear(d, d, bias=False)
        self.W2 = nn.Linear(d_key or d, d, bias=False)
        self.v = nn.Linear(d, 1, bias=False)

    def keys(self, k):
        return self.W2(k)

    def match(self, q, k):
        return self.v(torch.tanh(self.W1(q)[:, :, None] + k[:, None])).squeeze(-1)  # via (B, T, S, d)


class Concat(Score):
    """Luong's concat: v . tanh(W [h; e]), computed as W_h h + W_e e (W = [W_h W_e]) without building every
    (h, e) pair"""

    def __init__(self, d: int):
        super().__init__()
        self.W = nn.Linear(2 * d, d, bias=False)
        self.v = nn.Linear(d, 1, bias=False)

    def keys(self, k):
        return k @ self.W.weight[:, k.size(-1):].T  # W_e e

    def match(self, q, k):
        W_h = self.W.weight[:, : q.size(-1)]
        return self.v(torch.tanh((q @ W_h.T)[:, :, None] + k[:, None])).squeeze(-1)


SCORES = {"bahdanau": Additive, "dot": lambda d: Dot(), "general": General, "concat": Concat}


# ----------------------------------------------------------------------------- model

@dataclass(frozen=True)
class Seq2SeqSpec:
    vocab_size: int = 16     # symbols; SEP is id vocab_size, so the model reads and writes vocab_size + 1 ids
    source_length: int = 8
    cell: str = "gru"
    score: str = "bahdanau"  # 'none' (the last encoder state only) or one of SCORES, each in its wiring (WIRINGS)
    d_model: int = 32
    bidirectional: bool = True  # the encoder both ways (Bahdanau's, which his wiring needs); False: forward only
    input_feeding: bool = True  # Luong's wiring: h~_{t-1} joins the next step's input (his main setting)

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
        for name in ("bidirectional", "input_feeding"):
            if not isinstance(getattr(self, name), bool):
                bad(f"{name} must be true or false, got {getattr(self, name)!r}")
        if self.wiring == "bahdanau" and not self.bidirectional:
            bad("Bahdanau's wiring reads a bidirectional encoder's annotations; bidirectional is false")

    @property
    def wiring(self) -> str | None:
        return WIRINGS[self.score]

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


def rnn_output(state) -> torch.Tensor:
    """A decoder cell's state (GRU: h, LSTM: (h, c), each (B, d)) -> its output s (B, d)."""
    return state[0] if isinstance(state, tuple) else state


class Seq2Seq(nn.Module):
    def __init__(self, spec: Seq2SeqSpec):
        super().__init__()
        self.spec = spec
        d, V = spec.d_model, spec.n_tokens
        rnn = nn.GRU if spec.cell == "gru" else nn.LSTM
        cell = nn.GRUCell if spec.cell == "gru" else nn.LSTMCell  # a step at a time: faster than rnn on one step
        self.wiring, self.feed = spec.wiring, spec.wiring == "luong" and spec.input_feeding
        self.stepwise = self.wiring == "bahdanau" or self.feed  # the decoder's step t reads what step t-1 made
        self.emb = nn.Embedding(V, d)  # shared by encoder and decoder
        self.encoder = rnn(d, d, batch_first=True, bidirectional=spec.bidirectional)
        if self.wiring == "bahdanau":
            self.init = nn.Linear(d, d)  # s_0 = tanh(W_s backward_1)
            self.score = Additive(d, 2 * d)  # annotations [forward; backward], 2d wide
            self.decoder = cell(d + 2 * d, d)  # input [E y_{t-1}; c_t]
            self.readout = nn.Linear(d + d + 2 * d, 2 * d)  # U_o s_t + V_o E y_{t-1} + C_o c_t, maxout pools of 2
        else:
            self.bridge = nn.Linear(2 * d, d) if spec.bidirectional else None  # [forward; backward] -> d
            self.score = None if spec.score == "none" else SCORES[spec.score](d)
            self.decoder = cell(2 * d, d) if self.feed else rnn(d, d, batch_first=True)
            self.combine = nn.Linear(2 * d, d)  # Luong's attentional state h~ = tanh(W_c [c; h])
        self.head = nn.Linear(d, V)

    def encode(self, src):
        """src (B, S) -> memory (B, S, d; Bahdanau's: 2d): what the decoder attends to; last (B, d): the
        encoder's last state, the fixed vector; state: the decoder's initial state (see decode)."""
        out, final = self.encoder(self.emb(src))  # (B, S, d or 2d)
        h = final[0] if isinstance(final, tuple) else final  # (directions, B, d)
        if self.wiring == "bahdanau":  # h[1]: the backward direction's state after reading the first token
            memory, last = out, torch.tanh(self.init(h[1]))
            rnn_state = self.start(last)
        elif self.bridge is None:
            memory, last = out, h[-1]
            rnn_state = self.start(last, final[1][-1] if isinstance(final, tuple) else None)
        else:  # both directions' final states (the forward one after the last token, the backward one after the first)
            memory = torch.tanh(self.bridge(out))  # (B, S, d)
            last = torch.tanh(self.bridge(torch.cat([h[0], h[1]], dim=-1)))  # (B, d)
            rnn_state = self.start(last)
        return memory, last, (rnn_state, last.new_zeros(last.shape) if self.feed else None)

    def start(self, h, c=None):
        """The decoder's first RNN state from (B, d) tensors (an LSTM's memory cell c zero unless given): a cell's
        as they are, a whole-sequence RNN's with a layer dimension (1, B, d)."""
        if not self.stepwise:
            h, c = h[None], None if c is None else c[None]
        return h if self.spec.cell == "gru" else (h, torch.zeros_like(h) if c is None else c)

    def decode(self, memory, last, dec_in, state):
        """memory (B, S, d or 2d), last (B, d), dec_in (B, T), state: (the RNN's state, h~_{t-1} (B, d) for input
        feeding, else None) -> logits (B, T, V), weights (B, T, S) (None for 'none'), the new state.

        'none' reads only `last`: memory does not enter its computation at all.
        """
        x = self.emb(dec_in)  # (B, T, d)
        if self.wiring == "bahdanau":
            return self.decode_bahdanau(memory, x, state)
        if self.feed:
            return self.decode_feeding(memory, x, state)
        h, rnn_state = self.decoder(x, state[0])  # (B, T, d): every step at once
        if self.score is None:
            weights, ctx = None, last[:, None].expand_as(h)  # the same fixed vector at every step
        else:
            weights, ctx = self.attend(h, memory)
        return self.head(torch.tanh(self.combine(torch.cat([ctx, h], dim=-1)))), weights, (rnn_state, None)

    def attend(self, q, memory, keys=None):
        """Queries (B, T, dq) -> weights (B, T, S) and contexts (B, T, d or 2d); keys: score.keys(memory), once
        for every step."""
        weights = F.softmax(self.score.match(q, self.score.keys(memory) if keys is None else keys), dim=-1)
        return weights, weights @ memory

    def decode_bahdanau(self, memory, x, state):
        rnn_state, keys, ctxs, states, weights = state[0], self.score.keys(memory), [], [], []
        for t in range(x.size(1)):
            w, ctx = self.attend(rnn_output(rnn_state)[:, None], memory, keys)  # scored with s_{t-1}
            rnn_state = self.decoder(torch.cat([x[:, t], ctx[:, 0]], dim=-1), rnn_state)  # c_t is an input
            ctxs.append(ctx), states.append(rnn_output(rnn_state)[:, None]), weights.append(w)
        ctx, s = torch.cat(ctxs, 1), torch.cat(states, 1)  # (B, T, 2d), (B, T, d)
        pre = self.readout(torch.cat([s, x, ctx], dim=-1))  # (B, T, 2d)
        out = pre.unflatten(-1, (-1, 2)).amax(-1)  # maxout: (B, T, d)
        return self.head(out), torch.cat(weights, 1), (rnn_state, None)

    def decode_feeding(self, memory, x, state):
        (rnn_state, feed), keys, outs, weights = state, self.score.keys(memory), [], []
        for t in range(x.size(1)):
            rnn_state = self.decoder(torch.cat([x[:, t], feed], dim=-1), rnn_state)
            h = rnn_output(rnn_state)[:, None]  # (B, 1, d)
            w, ctx = self.attend(h, memory, keys)  # scored with s_t, after the RNN
            feed = torch.tanh(self.combine(torch.cat([ctx, h], dim=-1)))[:, 0]  # h~_t: the output, and next input
            outs.append(feed), weights.append(w)
        return self.head(torch.stack(outs, 1)), torch.cat(weights, 1), (rnn_state, feed)

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
