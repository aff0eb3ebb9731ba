r"""A tiny GPT of your own (notebooks 13 and 14): notebook 10's blocks stacked into a decoder, trained on a novel.

:class:`Decoder` is the model (its blocks are :class:`~attn_helpers.block.BlockParams`);
:func:`decoder_forward` runs it, with a KV cache or without (13), through :mod:`~attn_helpers.decoder`'s runner (the
one SmolLM2 uses too); :func:`gpt_loss_and_grads` and :func:`train_gpt` train it with the backward pieces of
:mod:`~attn_helpers.backprop`; :func:`filter_logits` and :func:`sample_next` sample from it, :func:`generate_ids`
through the one generation loop; :func:`load_tiny_gpt` loads the one trained on *Pride and Prejudice*.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import pathlib

import numpy as np

from ._validate import (
    as_flag,
    as_float_array,
    as_float_dtype,
    as_number,
    as_positive_int,
    as_positive_number,
    as_token_ids,
    checked_by_caller,
    dropout_inputs,
)
from .backprop import (
    block_backward,
    cross_entropy,
    cross_entropy_backward,
    embedding_backward,
    layer_norm_backward,
    linear_backward,
)
from .block import BlockParams, init_block_params, layer_norm
from .bpe import BPETokenizer
from .config import CONTEXT_LENGTH, FINAL_RATE, GPT_ADAM_BETAS, SEED, one_core
from .core import softmax
from .decoder import cached_length, check_cache, empty_cache, generate_tokens, run_blocks
from .kv_cache import init_grouped_query_params
from .positions import positional_encoding
from .training import adam_step

__all__ = ["Decoder", "random_decoder", "decoder_forward", "attention_weights", "generate", "corpus_split",
           "init_tiny_gpt", "decoder_arrays", "gpt_loss_and_grads", "train_gpt", "windows", "mean_loss",
           "ngram_losses", "ngram_probs", "filter_logits", "next_token_probs", "sample_next", "token_sampler",
           "generate_ids", "TinyGPT", "load_tiny_gpt", "load_dropout_record"]

DATA = pathlib.Path(__file__).resolve().parent / "data"
CORPUS_PATH = DATA / "pride_and_prejudice.txt"
#: Size and SHA-256 of ``pride_and_prejudice.txt`` as ``tools/build_tiny_gpt_corpus.py`` wrote it.
CORPUS_BYTES, CORPUS_SHA256 = 682303, "0afca23e40c7bac74ec3291ce1ccb40167d82cea5f15ae1d8a89bc62343a45a6"
WEIGHTS_PATH = DATA / "tiny_gpt.npz"
#: SHA-256 of ``tiny_gpt.npz`` as ``tools/train_tiny_gpt.py`` wrote it.
WEIGHTS_SHA256 = "e8649c7e3f2dba603b4aac548016c0af6da409fc9a5411247eb7f6e2506797e5"
DROPOUT_RECORD_PATH = DATA / "tiny_gpt_dropout_record.json"  # the same recipe trained with dropout 0.1
#: SHA-256 of ``tiny_gpt_dropout_record.json``.
DROPOUT_RECORD_SHA256 = "8864545d6b463f0b4a68781369b3a58a75d622070d9278423dffdd1a1e424d8b"


# --- the model ---------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True, eq=False)
class Decoder:
    """A GPT-style decoder made of notebook 10's blocks (untrained, unless you give it trained weights).

    ``x = embeddings[ids] + positional_encoding(T)``; each of ``blocks`` is a pre-norm
    :func:`~attn_helpers.block.transformer_block` with a causal mask; then
    ``layer_norm(x, final_norm_gamma, final_norm_beta) @ embeddings.T`` gives one score per
    token of the vocabulary (the output layer is tied to the embeddings, as in GPT-2).

    ``embeddings (vocab_size, d_model)``; ``blocks``: every block has the same ``d_model`` and heads;
    ``final_norm_gamma, final_norm_beta (d_model,)``.
    """

    embeddings: np.ndarray
    blocks: tuple
    final_norm_gamma: np.ndarray | None = None
    final_norm_beta: np.ndarray | None = None

    def __post_init__(self):
        embeddings = as_float_array(self.embeddings, "embeddings", min_ndim=2)
        if embeddings.ndim != 2:
            raise ValueError(f"embeddings must have shape (vocab_size, d_model); got shape {embeddings.shape}")
        blocks = (self.blocks,) if isinstance(self.blocks, BlockParams) else tuple(self.blocks)
        if not blocks or not all(isinstance(block, BlockParams) for block in blocks):
            raise TypeError("blocks must be a non-empty sequence of BlockParams (see init_block_params); got "
                            f"{[type(block).__name__ for block in blocks]}")
        shapes = {(block.d_model, block.num_heads, block.key_width) for block in blocks}
        if len(shapes) != 1 or blocks[0].d_model != embeddings.shape[1]:
            raise ValueError(f"every block needs d_model = {embeddings.shape[1]} (the embeddings' width) and the "
                             f"same heads; got (d_model, num_heads, key width) = {sorted(shapes)}")
        object.__setattr__(self, "embeddings", embeddings)
        object.__setattr__(self, "blocks", blocks)

    @property
    def vocab_size(self) -> int:
        return self.embeddings.shape[0]

    @property
    def d_model(self) -> int:
        return self.embeddings.shape[1]

    def empty_cache(self) -> list:
        """One empty :class:`~attn_helpers.kv_cache.KVCache` per block."""
        return empty_cache(self.blocks)


def random_decoder(vocab_size=8, d_model=16, num_heads=4, num_layers=2, *, num_kv_heads=None, dtype=np.float32,
                   seed=SEED):
    """A decoder with seeded random weights: what it writes means nothing, but it computes like a GPT.

    Block ``n`` is ``init_block_params(d_model, num_heads, rng=np.random.default_rng([seed, n]))``
    and the embeddings ``np.random.default_rng(seed).standard_normal((vocab_size, d_model))``:
    with the defaults these are notebook 10's creature sentence and blocks
    (:func:`~attn_helpers.examples.creature_block_example`), one embedding per word.
    ``num_kv_heads`` gives every block that many key/value heads
    (:func:`~attn_helpers.kv_cache.init_grouped_query_params`; 1: multi-query).

    >>> decoder = random_decoder(d_model=8, num_heads=4, num_layers=2, num_kv_heads=2)
    >>> len(decoder.blocks), decoder.blocks[0].W_q.shape, decoder.blocks[0].W_k.shape
    (2, (8, 8), (8, 4))
    """
    vocab_size, d_model = as_positive_int(vocab_size, "vocab_size"), as_positive_int(d_model, "d_model")
    seed, dtype = as_positive_int(seed, "seed", allow_zero=True), as_float_dtype(dtype)
    embeddings = np.random.default_rng(seed).standard_normal((vocab_size, d_model)).astype(dtype)
    init = init_block_params if num_kv_heads is None else functools.partial(init_grouped_query_params,
                                                                             num_kv_heads=num_kv_heads)
    blocks = [init(d_model, num_heads, rng=np.random.default_rng([seed, n]), dtype=dtype)
              for n in range(as_positive_int(num_layers, "num_layers"))]
    return Decoder(embeddings, blocks, np.ones(d_model, dtype=dtype), np.zeros(d_model, dtype=dtype))


def _as_decoder(decoder, name="decoder"):
    if isinstance(decoder, TinyGPT):
        raise TypeError(f"{name} must be a Decoder; got a TinyGPT: pass its decoder, model.decoder")
    if not isinstance(decoder, Decoder):
        raise TypeError(f"{name} must be a Decoder (see random_decoder, init_tiny_gpt); got {type(decoder).__name__}")
    return decoder


@checked_by_caller  # its callers check the decoder, the ids and the cache
def _forward(decoder, ids, cache=None, record=None, dropout=0.0, rng=None):
    """The decoder on checked ``ids (..., T)``: logits ``(..., T, vocab_size)``. ``record`` (a dict) gets what
    the backward pass reads: each block's record, the stream before the final layer norm, and after it."""
    T_past, T = cached_length(cache), ids.shape[-1]
    positions = positional_encoding(T_past + T, decoder.d_model, dtype=decoder.embeddings.dtype)[T_past:]  # (T, d)
    x = decoder.embeddings[ids] + positions  # (..., T, d_model)
    records = None if record is None else record.setdefault("blocks", [])
    x = run_blocks(x, decoder.blocks, cache, records, None, dropout, rng)  # (..., T, d_model): the causal blocks
    final = layer_norm(x, decoder.final_norm_gamma, decoder.final_norm_beta)  # GPT-2's final layer norm
    if record is not None:
        record.update(stream=x, final=final)
    return final @ decoder.embeddings.T  # (..., T, d_model) @ (d_model, vocab_size) -> (..., T, vocab_size)


def decoder_forward(decoder, ids, cache=None):
    """Scores of the next token after each position of ``ids``; with a ``cache``, of the new positions only.

    Without a cache the whole sequence goes through every block at once, under
    ``causal_mask(T)``. With one, ``ids`` are the tokens that follow the ``T_past`` cached
    positions: only their rows go through the blocks, attending to the cached keys and
    values and to each other's up to their own position; the cache (``decoder.empty_cache()``,
    then passed again at every step) grows by ``len(ids)``. Returns logits ``(T, vocab_size)``: row
    ``i`` scores the token after position ``T_past + i``, equal to row ``T_past + i`` of
    ``decoder_forward(decoder, all_ids)`` to rounding (notebook 13 says why not bit for bit).

    >>> decoder = random_decoder()
    >>> cache = decoder.empty_cache()
    >>> prompt_logits = decoder_forward(decoder, [0, 1, 2], cache)   # the prompt: 3 positions at once
    >>> next_logits = decoder_forward(decoder, [5], cache)          # then one new token
    >>> full = decoder_forward(decoder, [0, 1, 2, 5])                  # everything again
    >>> cache[0].length, bool(np.allclose(next_logits, full[3:], rtol=1e-5, atol=1e-5))
    (4, True)
    """
    decoder = _as_decoder(decoder)
    ids = as_token_ids(ids, decoder.vocab_size, "ids", (1,))
    return _forward(decoder, ids, None if cache is None else check_cache(cache, decoder.blocks))


def attention_weights(decoder, ids):
    """Every head's attention weights as :func:`decoder_forward` computes them (read from its record, not a second
    forward): ``ids (T,)`` or ``(B, T)`` gives ``(..., layers, h, T, T)``.

    >>> attention_weights(random_decoder(num_layers=2, num_heads=4), [0, 1, 2]).shape
    (2, 4, 3, 3)
    """
    decoder = _as_decoder(decoder)
    record = {}
    _forward(decoder, as_token_ids(ids, decoder.vocab_size, "ids", (1, 2)), record=record)
    return np.stack([block["attention"]["weights"] for block in record["blocks"]], axis=-4)  # (..., layers, h, T, T)


def generate(decoder, prompt, steps, *, use_cache=True):
    """Greedy generation: append the highest-scoring next token ``steps`` times.

    With ``use_cache=False`` the whole sequence goes through :func:`decoder_forward` at every
    step; with ``use_cache=True`` the prompt goes through once, filling a cache, and then
    each step runs only the newest token. Returns the ids (the prompt, then the ``steps`` new
    ones) and the logits ``(steps, vocab_size)`` before each choice.

    >>> decoder = random_decoder()
    >>> ids, _ = generate(decoder, [0, 1, 2], steps=5)
    >>> ids == generate(decoder, [0, 1, 2], steps=5, use_cache=False)[0]
    True
    """
    decoder = _as_decoder(decoder)
    ids = [int(i) for i in as_token_ids(prompt, decoder.vocab_size, "prompt", (1,))]
    steps = as_positive_int(steps, "steps", allow_zero=True)
    tokens = list(generate_tokens(functools.partial(_forward, decoder), ids, steps, np.argmax,
                                  use_cache=as_flag(use_cache, "use_cache"), new_cache=decoder.empty_cache))
    all_logits = np.array([logits for logits, _ in tokens], dtype=decoder.embeddings.dtype)  # (steps, vocab_size)
    return ids + [token for _, token in tokens], all_logits.reshape(steps, decoder.vocab_size)


def _read_corpus():
    """The novel's text, checked by its size and SHA-256."""
    try:
        data = CORPUS_PATH.read_bytes()
    except OSError as err:  # missing, a folder, unreadable
        data = f"{type(err).__name__}"
    if len(data) != CORPUS_BYTES or hashlib.sha256(data).hexdigest() != CORPUS_SHA256:
        raise RuntimeError(f"The corpus {CORPUS_PATH.name} is missing or damaged (its size or SHA-256 does not "
                           "match): restore the file from the repository, or rebuild it with "
                           "`python tools/build_tiny_gpt_corpus.py`.")
    return data.decode("utf-8")


def corpus_split(split):
    """The training text (the first 90 % of the novel's paragraphs) or the validation text (the rest).

    >>> corpus_split("train")[:47]
    'PRIDE AND PREJUDICE\\nBy Jane Austen\\nChapter 1\\nIt'
    """
    if split not in ("train", "val"):
        raise ValueError(f"split must be 'train' or 'val'; got {split!r}")
    paragraphs = _read_corpus().splitlines(keepends=True)
    cut = int(0.9 * len(paragraphs))
    return "".join(paragraphs[:cut] if split == "train" else paragraphs[cut:])


def init_tiny_gpt(vocab_size, d_model=64, num_heads=4, num_layers=2, *, seed=SEED, dtype=np.float32):
    """An untrained tiny GPT: notebook 10's blocks with biases and GPT-2's tanh GELU.

    Block ``n`` starts as ``init_block_params(d_model, num_heads, rng=default_rng([seed, n]),
    bias=True)``; the embeddings are normal with standard deviation ``1 / sqrt(d_model)``, so
    the first scores ``layer_norm(x) @ embeddings.T`` are about 1 in size and the first loss
    is near ``log(vocab_size)``. ``seed=None`` is ``SEED``.

    >>> decoder = init_tiny_gpt(vocab_size=300, d_model=16, num_heads=2, num_layers=1)
    >>> decoder.vocab_size, decoder.d_model, decoder.blocks[0].activation
    (300, 16, 'gelu_tanh')
    """
    vocab_size, d_model = as_positive_int(vocab_size, "vocab_size"), as_positive_int(d_model, "d_model")
    num_layers, dtype = as_positive_int(num_layers, "num_layers"), as_float_dtype(dtype)
    seed = SEED if seed is None else as_positive_int(seed, "seed", allow_zero=True)
    embeddings = (np.random.default_rng(seed).standard_normal((vocab_size, d_model)) / math.sqrt(d_model))
    blocks = [dataclasses.replace(init_block_params(d_model, num_heads, rng=np.random.default_rng([seed, n]),
                                                    dtype=dtype, bias=True), activation="gelu_tanh")
              for n in range(num_layers)]
    return Decoder(embeddings.astype(dtype), blocks, np.ones(d_model, dtype=dtype), np.zeros(d_model, dtype=dtype))


_BLOCK_ARRAYS = ("W_q", "W_k", "W_v", "W_o", "W_1", "W_2", "b_q", "b_k", "b_v", "b_o", "b_1", "b_2",
                 "norm_1_gamma", "norm_1_beta", "norm_2_gamma", "norm_2_beta")


def decoder_arrays(decoder):
    """Every array of the decoder by name, the arrays themselves (not copies): ``embeddings``,
    ``blocks.0.W_q`` ... ``blocks.0.norm_2_beta``, ..., ``final_norm_gamma``, ``final_norm_beta``. These are
    the names of :func:`gpt_loss_and_grads`' gradients, of what Adam updates in place, and of the weights file.

    >>> sorted(decoder_arrays(random_decoder(num_layers=1)))[:3]
    ['blocks.0.W_1', 'blocks.0.W_2', 'blocks.0.W_k']
    """
    arrays = {"embeddings": decoder.embeddings}
    for n, block in enumerate(decoder.blocks):
        arrays.update({f"blocks.{n}.{name}": getattr(block, name) for name in _BLOCK_ARRAYS})
    arrays.update(final_norm_gamma=decoder.final_norm_gamma, final_norm_beta=decoder.final_norm_beta)
    return {name: array for name, array in arrays.items() if array is not None}


def _copy(decoder):
    """The same decoder with copies of its arrays (training updates them in place)."""
    blocks = [dataclasses.replace(block, **{name: getattr(block, name).copy() for name in _BLOCK_ARRAYS
                                            if getattr(block, name) is not None}) for block in decoder.blocks]
    gamma, beta = (None if a is None else a.copy() for a in (decoder.final_norm_gamma, decoder.final_norm_beta))
    return Decoder(decoder.embeddings.copy(), blocks, gamma, beta)


# --- training and evaluation --------------------------------------------------------------------------------

def _batch_inputs(decoder, ids, targets, dropout=0.0, rng=None):
    decoder = _as_decoder(decoder)
    ids = as_token_ids(ids, decoder.vocab_size, "ids", (1, 2))
    targets = as_token_ids(targets, decoder.vocab_size, "targets", (1, 2))
    if ids.shape != targets.shape:
        raise ValueError(f"ids has shape {ids.shape} and targets {targets.shape}; expected the same shape, (B, T) "
                         "or (T,)")
    return decoder, ids, targets, *dropout_inputs(dropout, rng)


def gpt_loss_and_grads(decoder, ids, targets, dropout=0.0, rng=None):
    r"""Mean cross-entropy of the next-token predictions and its gradient for every parameter.

    The forward pass is :func:`decoder_forward`'s (for a batch), keeping a record of each block's
    intermediate values; the backward pass runs it in reverse: cross-entropy, the tied output layer, the final
    layer norm, each block (:func:`~attn_helpers.backprop.block_backward`), and the embedding lookup. The
    embeddings get two contributions, as the output layer and as the input lookup, and they add.

    ``ids, targets (B, T) or (T,)``: ``targets[..., t]`` is the token after ``ids[..., t]``. Returns ``loss``:
    nats per token; ``grads``: one gradient per array of :func:`decoder_arrays`, by the same names. ``dropout``
    (off by default): every block's dropout rate in this forward pass, ``rng`` draws the masks
    (:func:`~attn_helpers.block.transformer_block`).
    """
    return _loss_and_grads(*_batch_inputs(decoder, ids, targets, dropout, rng))


@checked_by_caller  # its callers check the decoder, the ids and the targets
def _loss_and_grads(decoder, ids, targets, dropout=0.0, rng=None):
    record = {}
    logits = _forward(decoder, ids, None, record, dropout, rng)
    loss = cross_entropy(logits, targets)
    grad_logits = cross_entropy_backward(logits, targets)  # (softmax - onehot) / N: (B, T, vocab)
    # The tied output layer: logits = final @ embeddings.T.
    grad_final, grad_embeddings_T = linear_backward(record["final"], decoder.embeddings.T, grad_logits)
    grads = {"embeddings": grad_embeddings_T.T}
    grad_x, grads["final_norm_gamma"], grads["final_norm_beta"] = layer_norm_backward(
        grad_final, record["stream"], decoder.final_norm_gamma)
    for n in reversed(range(len(decoder.blocks))):
        grad_x, block_grads = block_backward(grad_x, record["blocks"][n], decoder.blocks[n])
        grads.update({f"blocks.{n}.{name}": grad for name, grad in block_grads.items()})
    # The input lookup: x = embeddings[ids] + positions (the sinusoidal positions have no parameters).
    grads["embeddings"] = grads["embeddings"] + embedding_backward(ids, grad_x, decoder.vocab_size)
    return loss, {name: grads[name].astype(array.dtype, copy=False) for name, array in decoder_arrays(decoder).items()}


def windows(ids, context_length, starts):
    """Inputs ``ids[s : s + T]`` and targets ``ids[s + 1 : s + T + 1]`` for each start ``s``: ``(B, T)`` each."""
    ids = np.asarray(ids)
    offsets = np.asarray(starts)[:, None] + np.arange(context_length)  # (B, T)
    return ids[offsets], ids[offsets + 1]


def _text_inputs(decoder, ids, context_length, name="ids"):
    """The decoder, ``ids`` and ``context_length`` checked: at least one window of ``context_length + 1`` ids."""
    decoder = _as_decoder(decoder)
    context_length = as_positive_int(context_length, "context_length")
    ids = as_token_ids(ids, decoder.vocab_size, name, (1,))
    if len(ids) < context_length + 1:
        raise ValueError(f"{name} has {len(ids)} tokens; expected at least context_length + 1 = "
                         f"{context_length + 1} (one window and the token after it)")
    return decoder, ids, context_length


@one_core()
def train_gpt(decoder, train_ids, steps, *, batch_size=16, context_length=CONTEXT_LENGTH, learning_rate=3e-3,
              seed=SEED, warmup=50, decay=True, callback=None, dropout=0.0):
    """Train ``decoder`` with Adam on random windows of ``train_ids``; return the trained decoder and the losses.

    Each step draws ``batch_size`` windows of ``context_length`` tokens (seeded), computes
    :func:`gpt_loss_and_grads` and takes one :func:`~attn_helpers.training.adam_step`. The
    learning rate rises linearly over ``warmup`` steps, then (with ``decay``) falls along a cosine to
    ``FINAL_RATE`` (a tenth) of its peak; Adam's decay rates are ``GPT_ADAM_BETAS`` (:mod:`~attn_helpers.config`).
    ``dropout`` (off by default; None is off too) is every block's dropout rate while training
    (:func:`~attn_helpers.block.transformer_block`), its masks drawn from the same seeded generator.

    Returns ``decoder``: a new decoder; the one passed in is not changed; ``losses (steps,)``: the training loss of
    each step's batch, in nats per token.
    """
    decoder, train_ids, context_length = _text_inputs(decoder, train_ids, context_length, "train_ids")
    steps, batch_size = as_positive_int(steps, "steps", allow_zero=True), as_positive_int(batch_size, "batch_size")
    learning_rate = as_positive_number(learning_rate, "learning_rate")
    warmup, decay = as_positive_int(warmup, "warmup", allow_zero=True), as_flag(decay, "decay")
    dropout, rng = dropout_inputs(dropout, seed)
    model = _copy(decoder)
    params, state = decoder_arrays(model), {}  # Adam updates the model's own arrays
    losses = np.zeros(steps)
    for step in range(steps):
        starts = rng.integers(0, max(len(train_ids) - context_length - 1, 1), size=batch_size)  # (B,)
        loss, grads = _loss_and_grads(model, *windows(train_ids, context_length, starts), dropout, rng)
        rate = learning_rate * min(1.0, (step + 1) / max(warmup, 1))
        if decay and step >= warmup:  # from the peak down to FINAL_RATE of it, along half a cosine
            progress = (step - warmup) / max(steps - warmup, 1)  # 0 -> 1
            rate *= FINAL_RATE + (1 - FINAL_RATE) / 2 * (1 + math.cos(math.pi * progress))
        adam_step(params, grads, state, rate, *GPT_ADAM_BETAS)
        losses[step] = loss
        if callback is not None:
            callback(step, loss)
    return model, losses


def _eval_windows(ids, context_length):
    count = (len(ids) - 1) // context_length
    return windows(ids, context_length, np.arange(count) * context_length)


@one_core()
def mean_loss(decoder, ids, context_length=CONTEXT_LENGTH, batch_size=64):
    """Mean cross-entropy, nats per token, of the decoder's predictions on ``ids``.

    ``ids`` is cut into consecutive windows of ``context_length`` tokens (the last partial
    window is dropped); every token of a window is predicted from the tokens before it in
    its window.
    """
    decoder, ids, context_length = _text_inputs(decoder, ids, context_length)
    batch_size = as_positive_int(batch_size, "batch_size")
    inputs, targets = _eval_windows(ids, context_length)
    total = 0.0
    for start in range(0, len(inputs), batch_size):
        batch = slice(start, start + batch_size)
        total += cross_entropy(_forward(decoder, inputs[batch]), targets[batch]) * len(inputs[batch])
    return total / len(inputs)


def ngram_probs(train_ids, vocab_size, alpha):
    """The baselines' probabilities from checked ``train_ids``: unigram ``(V,)`` and bigram ``(V, V)``."""
    unigram = (np.bincount(train_ids, minlength=vocab_size) + 1.0) / (len(train_ids) + vocab_size)  # (V,)
    pairs = np.zeros((vocab_size, vocab_size))
    np.add.at(pairs, (train_ids[:-1], train_ids[1:]), 1.0)  # pairs[a, b]: how often b follows a
    return unigram, (pairs + alpha * unigram) / (pairs.sum(axis=1, keepdims=True) + alpha)  # each row sums to 1


def ngram_losses(train_ids, ids, vocab_size, context_length=CONTEXT_LENGTH, alpha=1.0):
    r"""The unigram and bigram baselines' mean cross-entropy on the same targets as :func:`mean_loss`.

    Unigram: :math:`p(b) = (n_b + 1) / (N + V)` (add-one smoothing). Bigram:
    :math:`p(b \mid a) = (n_{ab} + \alpha\, p(b)) / (n_a + \alpha)`, the counts of the training
    text smoothed towards the unigram, so a pair never seen in training is not impossible.
    The first token of each window has no previous token inside the window: as for the model,
    the bigram is given the token before it all the same (it sees one token back; the model
    up to 63).

    Returns ``losses``: ``{"unigram": float, "bigram": float}``, nats per token.
    """
    vocab_size = as_positive_int(vocab_size, "vocab_size")
    train_ids = as_token_ids(train_ids, vocab_size, "train_ids", (1,))
    ids = as_token_ids(ids, vocab_size, "ids", (1,))
    context_length = as_positive_int(context_length, "context_length")
    if len(ids) < context_length + 1:
        raise ValueError(f"ids has {len(ids)} tokens; expected at least context_length + 1 = {context_length + 1}")
    unigram, bigram = ngram_probs(train_ids, vocab_size, alpha)
    inputs, targets = _eval_windows(ids, context_length)
    return {"unigram": float(-np.log(unigram[targets]).mean()),
            "bigram": float(-np.log(bigram[inputs, targets]).mean())}


# --- sampling -----------------------------------------------------------------------------------

def filter_logits(logits, top_k=None, top_p=None):
    r"""Keep the ``top_k`` highest scores and/or the nucleus of probability ``top_p``; the rest become ``-inf``.

    Top-k keeps the ``k`` largest logits (ties: the lower token id first). Top-p (Holtzman et
    al. 2020) sorts the tokens by probability and keeps the smallest set whose probabilities
    sum to at least ``p``: a token is kept when the tokens more probable than it sum to less
    than ``p``, so the most probable token is always kept. With both, top-k goes first.

    ``logits (..., vocab)``. Returns ``filtered (..., vocab)``.

    >>> logits = np.log(np.array([0.5, 0.3, 0.15, 0.05]))
    >>> filter_logits(logits, top_k=2).round(3)
    array([-0.693, -1.204,   -inf,   -inf])
    >>> filter_logits(logits, top_p=0.75).round(3)   # 0.5 < 0.75, then 0.5 + 0.3 >= 0.75: two tokens
    array([-0.693, -1.204,   -inf,   -inf])
    """
    z = as_float_array(logits, "logits", min_ndim=1, allow_neg_inf=True)
    out = z.copy()
    order = np.argsort(-z, axis=-1, kind="stable")  # most probable first; ties: the lower id first
    if top_k is not None:
        top_k = as_positive_int(top_k, "top_k")
        drop = np.zeros(z.shape, dtype=bool)
        np.put_along_axis(drop, order[..., top_k:], True, axis=-1)
        out[drop] = -np.inf
    if top_p is not None:
        top_p = _top_p(top_p)
        probs = np.take_along_axis(softmax(out, axis=-1), order, axis=-1)  # (..., vocab), sorted
        before = np.cumsum(probs, axis=-1) - probs  # the probability of the tokens ranked above each one
        drop = np.zeros(z.shape, dtype=bool)
        # (1e-9: the running sum's rounding; ten probabilities 0.1 sum to 0.8999999999999999 after nine)
        np.put_along_axis(drop, order, before >= top_p - 1e-9, axis=-1)
        out[drop] = -np.inf
    return out


def _top_p(top_p):
    if top_p is not None and not 0 < as_number(top_p, "top_p", range_="a number in (0, 1]") <= 1:
        raise ValueError(f"top_p must be a number in (0, 1]; got {top_p!r}")
    return top_p


def _sampling_inputs(logits, temperature, top_k, top_p):
    z = as_float_array(logits, "logits", min_ndim=1, allow_neg_inf=True)  # -inf: a token filter_logits removed
    if z.ndim != 1:
        raise ValueError(f"logits must have shape (vocab,); got shape {z.shape}")
    if not np.isfinite(z).any():
        raise ValueError("logits are all -inf; expected at least one finite score")
    temperature = as_number(temperature, "temperature", range_="a finite number >= 0")
    if temperature < 0:
        raise ValueError(f"temperature must be a number >= 0; got {temperature!r}")
    top_k = None if top_k is None else as_positive_int(top_k, "top_k")
    return z, temperature, top_k, _top_p(top_p)


def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    r"""The distribution :func:`sample_next` draws from: ``softmax(filter_logits(logits / temperature))``.

    ``temperature=0`` is greedy: all the probability on the highest-scoring token (the
    lowest id among ties). A temperature below 1 sharpens the distribution, above 1
    flattens it (notebook 03). Top-k and top-p act on the tempered scores; ``logits`` may hold ``-inf``
    (the tokens :func:`filter_logits` removed).

    ``logits (vocab,)``. Returns ``probs (vocab,)``.

    >>> next_token_probs(np.log([0.5, 0.3, 0.2]), top_k=2).round(3)
    array([0.625, 0.375, 0.   ])
    >>> next_token_probs(np.log([0.5, 0.3, 0.2]), temperature=0)
    array([1., 0., 0.])
    """
    return _probs(*_sampling_inputs(logits, temperature, top_k, top_p))


def _probs(z, temperature, top_k, top_p):
    if temperature == 0:
        return (np.arange(len(z)) == np.argmax(z)).astype(np.float64)
    return softmax(filter_logits(z.astype(np.float64) / temperature, top_k, top_p))  # (vocab,)


def sample_next(logits, temperature=1.0, top_k=None, top_p=None, rng=None):
    r"""Draw the next token from :func:`next_token_probs` (``temperature=0``: the highest score, no draw).

    ``logits (vocab,)``; ``rng``: default ``np.random.default_rng(SEED)``.

    >>> sample_next(np.array([1.0, 3.0, 2.0]), temperature=0)
    1
    >>> sample_next(np.array([1.0, 3.0, 2.0]), top_k=1, rng=0)   # only one token left to draw
    1
    """
    z, *settings = _sampling_inputs(logits, temperature, top_k, top_p)
    return token_sampler(*settings, rng)(z)


def token_sampler(temperature=1.0, top_k=None, top_p=None, rng=None):
    """The function ``choose(logits) -> token`` that draws as :func:`sample_next` does, its settings checked once:
    what the generation loops call at every token. ``rng``: a Generator, or a seed (default ``SEED``).

    >>> choose = token_sampler(temperature=0.8, top_k=2, rng=SEED)
    >>> [choose(np.array([1.0, 3.0, 2.0])) for _ in range(5)]
    [2, 1, 2, 1, 1]
    """
    _, temperature, top_k, top_p = _sampling_inputs(np.zeros(1), temperature, top_k, top_p)
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(SEED if rng is None else rng)

    def choose(logits):
        probs = _probs(np.asarray(logits, dtype=np.float64), temperature, top_k, top_p)  # (vocab,)
        return int(np.argmax(probs)) if temperature == 0 else _draw(probs, rng)
    return choose


@one_core()
def generate_ids(decoder, prompt_ids, max_new_tokens, *, context_length=CONTEXT_LENGTH, temperature=1.0, top_k=None,
                 top_p=None, rng=None, use_cache=True):
    """Append ``max_new_tokens`` sampled tokens to ``prompt_ids``; return all the ids.

    The model sees at most ``context_length`` tokens: when the window is full it jumps
    forward and keeps the last half. With ``use_cache`` the window's keys and values stay
    in a KV cache (notebook 13) and each step runs only the newest token; at a jump the
    cache is refilled from the kept half. Both ways compute the same scores.
    """
    decoder = _as_decoder(decoder)
    ids = [int(i) for i in as_token_ids(prompt_ids, decoder.vocab_size, "prompt_ids", (1,))]
    context_length = as_positive_int(context_length, "context_length")
    max_new_tokens, use_cache = as_positive_int(max_new_tokens, "max_new_tokens", allow_zero=True), as_flag(
        use_cache, "use_cache")
    choose = token_sampler(temperature, top_k, top_p, rng)  # checked once, not at every token
    tokens = generate_tokens(functools.partial(_forward, decoder), ids, max_new_tokens, choose,
                             context_length=context_length, use_cache=use_cache, new_cache=decoder.empty_cache)
    return ids + [token for _, token in tokens]


def _draw(probs, rng):
    """One token drawn with probabilities ``probs``: where a uniform number falls in their running sum."""
    cumulative = np.cumsum(probs)
    return int(min(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"), len(probs) - 1))


@dataclasses.dataclass(frozen=True, eq=False)
class TinyGPT:
    """A trained tiny GPT with its tokenizer: ``logits``, ``generate``, ``corpus_split``.

    ``record``: how it was trained: configuration, steps, seconds, training losses.
    """

    decoder: Decoder
    tokenizer: BPETokenizer
    context_length: int = CONTEXT_LENGTH
    record: dict = dataclasses.field(default_factory=dict)

    def logits(self, ids):
        """Scores of the next token after each position, ``(T, vocab)``, for at most ``context_length`` ids."""
        ids = as_token_ids(ids, self.decoder.vocab_size, "ids", (1,))
        if len(ids) > self.context_length:
            raise ValueError(f"ids has {len(ids)} tokens; the model reads at most {self.context_length}")
        return _forward(self.decoder, ids)

    def generate(self, prompt, max_new_tokens, temperature=1.0, top_k=None, top_p=None, seed=None, use_cache=True):
        """The prompt followed by ``max_new_tokens`` sampled tokens, as text (``seed`` default: ``SEED``)."""
        if not isinstance(prompt, str) or not prompt:
            raise ValueError(f"prompt must be a non-empty str; got {prompt!r}")
        ids = generate_ids(self.decoder, self.tokenizer.encode(prompt), max_new_tokens,
                           context_length=self.context_length, temperature=temperature, top_k=top_k, top_p=top_p,
                           rng=seed, use_cache=use_cache)
        return self.tokenizer.decode(ids)

    @staticmethod
    def corpus_split(split):
        """The training or validation text (see :func:`corpus_split`)."""
        return corpus_split(split)


def _verified(path, expected, what, rebuild):
    """``path`` as a Path, once its SHA-256 is ``expected`` (None: not checked); else one sentence naming the file
    (``what``: its subject, ``{}`` where the file's name goes)."""
    path = pathlib.Path(path)
    if not path.is_file() or (expected is not None and hashlib.sha256(path.read_bytes()).hexdigest() != expected):
        raise RuntimeError(f"{what.format(path.name)} missing or damaged (the SHA-256 does not match): restore the "
                           f"file from the repository, or rebuild it with {rebuild}.")
    return path


def load_tiny_gpt(path=WEIGHTS_PATH, sha256=None):
    """The tiny GPT that ``tools/train_tiny_gpt.py`` trained on *Pride and Prejudice*, checked by its SHA-256.

    The file holds :func:`decoder_arrays` by name, the tokenizer's ``merges`` and the training ``record``.
    """
    path = _verified(path, WEIGHTS_SHA256 if sha256 is None else sha256, "The tiny GPT's weights {} are",
                     "`python tools/train_tiny_gpt.py`")
    with np.load(path) as data:
        arrays = {name: data[name] for name in data.files}
    record = json.loads(str(arrays.pop("record")))
    tokenizer = BPETokenizer(arrays.pop("merges").tolist())
    num_layers = len({name.split(".")[1] for name in arrays if name.startswith("blocks.")})
    blocks = [BlockParams(**{name: arrays[f"blocks.{n}.{name}"] for name in _BLOCK_ARRAYS},
                          num_heads=record["num_heads"], activation="gelu_tanh") for n in range(num_layers)]
    decoder = Decoder(arrays["embeddings"], blocks, arrays["final_norm_gamma"], arrays["final_norm_beta"])
    return TinyGPT(decoder, tokenizer, record["context_length"], record)


def load_dropout_record(path=DROPOUT_RECORD_PATH, sha256=None):
    """The record of the tiny GPT's recipe trained with dropout, checked by its SHA-256 (notebook 15).

    ``python tools/train_tiny_gpt.py --dropout 0.1 --out ...`` wrote it: ``recipe``, the training loss every 10
    steps (``steps``, ``losses``), ``train_loss`` and ``val_loss`` measured by :func:`mean_loss` on the whole
    training and validation ids (dropout off), and ``shipped``: the same two losses of :func:`load_tiny_gpt`'s
    model, trained without dropout.
    """
    path = _verified(path, DROPOUT_RECORD_SHA256 if sha256 is None else sha256, "The dropout run's record {} is",
                     "`python tools/train_tiny_gpt.py --dropout 0.1 --out tiny_gpt_dropout_record.json`")
    return json.loads(path.read_text())
