r"""A tiny GPT of your own (notebook 14): notebook 10's blocks, every gradient written out, trained on a novel.

The model is :class:`~attn_helpers.kv_cache.Decoder`; here: the backward pieces notebook 11 did not need (up to
:func:`loss_and_grads`), :func:`train`, sampling (:func:`filter_logits`, :func:`sample_next`), the step to Llama
(:func:`rms_norm`, :func:`swiglu_ffn`) and :func:`load_tiny_gpt`. Parameters travel as one flat dict of arrays.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import pathlib

import numpy as np
from threadpoolctl import threadpool_limits

from ._validate import as_float_array, as_positive_int
from .backprop import attention_backward, cross_entropy, cross_entropy_backward, embedding_backward, linear_backward
from .block import BlockParams, gelu, init_block_params, layer_norm
from .bpe import BPETokenizer
from .config import SEED
from .core import causal_mask, scaled_dot_product_attention, softmax
from .kv_cache import Decoder, decoder_forward
from .multihead import merge_heads, split_heads
from .positions import positional_encoding
from .training import adam_step

__all__ = [
    "corpus_split",
    "block_arrays",
    "make_block",
    "init_tiny_gpt",
    "decoder_params",
    "decoder_from_params",
    "layer_norm_backward",
    "gelu_backward",
    "feed_forward_backward",
    "attention_layer_backward",
    "block_forward",
    "block_backward",
    "loss_and_grads",
    "train",
    "windows",
    "mean_loss",
    "ngram_losses",
    "filter_logits",
    "next_token_probs",
    "sample_next",
    "generate_ids",
    "TinyGPT",
    "load_tiny_gpt",
    "LLAMA2_7B",
    "rms_norm",
    "silu",
    "swiglu_ffn",
    "llama_parameter_count",
]

DATA = pathlib.Path(__file__).resolve().parent / "data"
CORPUS_PATH = DATA / "pride_and_prejudice.txt"
WEIGHTS_PATH = DATA / "tiny_gpt.npz"
#: SHA-256 of ``tiny_gpt.npz`` as ``tools/train_tiny_gpt.py`` wrote it.
WEIGHTS_SHA256 = "e8649c7e3f2dba603b4aac548016c0af6da409fc9a5411247eb7f6e2506797e5"


def _one_thread(f):
    """Run ``f`` with BLAS limited to one thread: the products here are small, and several threads
    fighting over a busy machine's cores make them several times slower, not faster."""
    @functools.wraps(f)
    def limited(*args, **kwargs):
        with threadpool_limits(1):
            return f(*args, **kwargs)
    return limited


def corpus_split(split):
    """The training text (the first 90 % of the novel's paragraphs) or the validation text (the rest).

    >>> corpus_split("train")[:47]
    'PRIDE AND PREJUDICE\\nBy Jane Austen\\nChapter 1\\nIt'
    """
    if split not in ("train", "val"):
        raise ValueError(f"split must be 'train' or 'val'; got {split!r}")
    paragraphs = CORPUS_PATH.read_text(encoding="utf-8").splitlines(keepends=True)
    cut = int(0.9 * len(paragraphs))
    return "".join(paragraphs[:cut] if split == "train" else paragraphs[cut:])


# ---------------------------------------------------------------------------------------------
# A block's arrays, by the names that BlockParams and the notebooks share.
_FIELDS = ("W_q", "W_k", "W_v", "W_o", "W_1", "W_2", "b_q", "b_k", "b_v", "b_o", "b_1", "b_2",
           "norm_1_gamma", "norm_1_beta", "norm_2_gamma", "norm_2_beta")


def block_arrays(block):
    """A block's arrays by the notebooks' names: ``{"W_q": ..., "b_q": ..., "norm_1_gamma": ...}``."""
    return {name: getattr(block, name) for name in _FIELDS}


def make_block(arrays, num_heads):
    """A :class:`~attn_helpers.block.BlockParams` (GPT-2's tanh GELU) from :func:`block_arrays`' dict."""
    return BlockParams(**{name: arrays[name] for name in _FIELDS}, num_heads=num_heads,
                       activation="gelu_tanh")
# ---------------------------------------------------------------------------------------------


def init_tiny_gpt(vocab_size, d_model=64, num_heads=4, num_layers=2, *, seed=SEED, dtype=np.float32):
    """An untrained tiny GPT: notebook 10's blocks with biases and GPT-2's tanh GELU.

    Block ``n`` starts as ``init_block_params(d_model, num_heads, rng=default_rng([seed, n]),
    bias=True)``; the embeddings are normal with standard deviation ``1 / sqrt(d_model)``, so
    the first scores ``layer_norm(x) @ embeddings.T`` are about 1 in size and the first loss
    is near ``log(vocab_size)``.

    >>> decoder = init_tiny_gpt(vocab_size=300, d_model=16, num_heads=2, num_layers=1)
    >>> decoder.vocab_size, decoder.d_model, decoder.blocks[0].activation
    (300, 16, 'gelu_tanh')
    """
    vocab_size, d_model = as_positive_int(vocab_size, "vocab_size"), as_positive_int(d_model, "d_model")
    num_layers = as_positive_int(num_layers, "num_layers")
    embeddings = (np.random.default_rng(seed).standard_normal((vocab_size, d_model)) / math.sqrt(d_model))
    blocks = [make_block(block_arrays(init_block_params(d_model, num_heads, rng=np.random.default_rng([seed, n]),
                                                        dtype=dtype, bias=True)), num_heads)
              for n in range(num_layers)]
    return Decoder(embeddings.astype(dtype), blocks, np.ones(d_model, dtype=dtype), np.zeros(d_model, dtype=dtype))


def decoder_params(decoder):
    """The decoder's arrays as one flat dict (copies), the form Adam updates in place."""
    params = {"embeddings": decoder.embeddings.copy()}
    for n, block in enumerate(decoder.blocks):
        params.update({f"blocks.{n}.{name}": array.copy() for name, array in block_arrays(block).items()})
    params["final_norm_gamma"] = decoder.final_norm_gamma.copy()
    params["final_norm_beta"] = decoder.final_norm_beta.copy()
    return params


def _num_layers(params):
    return len({key.split(".")[1] for key in params if key.startswith("blocks.")})


def _block_dict(params, n):
    return {name: params[f"blocks.{n}.{name}"] for name in _FIELDS}


def decoder_from_params(params, num_heads):
    """The :class:`~attn_helpers.kv_cache.Decoder` that a flat parameter dict describes."""
    blocks = [make_block(_block_dict(params, n), num_heads) for n in range(_num_layers(params))]
    return Decoder(params["embeddings"], blocks, params["final_norm_gamma"], params["final_norm_beta"])


# --- backward pieces ---------------------------------------------------------------------------

def layer_norm_backward(grad_out, x, gamma=None, eps=1e-5):
    r"""Gradients of :func:`~attn_helpers.block.layer_norm` with respect to ``x``, ``gamma`` and ``beta``.

    With :math:`\hat x = (x - \mu)/\sigma`, :math:`\sigma = \sqrt{\mathrm{var} + \varepsilon}` and
    :math:`g = \gamma \odot \partial\mathrm{out}` (row by row, over the ``d`` features):

    .. math:: \partial x = \frac{1}{\sigma}\left(g - \overline{g} - \hat x\, \overline{g \odot \hat x}\right), \quad
              \partial\gamma = \sum_{\text{rows}} \partial\mathrm{out} \odot \hat x, \quad
              \partial\beta = \sum_{\text{rows}} \partial\mathrm{out}

    (a bar is the mean over the features). The two subtracted terms are the paths through
    the mean and the variance: ``grad_x`` of each row sums to 0.

    ``grad_out (..., d)``; ``x (..., d)``: the layer norm's input; ``gamma (d,)``: default 1. Returns
    ``grad_x (..., d)``; ``grad_gamma, grad_beta (d,)``.

    >>> grad_x, grad_gamma, grad_beta = layer_norm_backward(np.array([[1.0, 0.0, 0.0]]), np.array([[1.0, 2.0, 4.0]]))
    >>> grad_x.shape, bool(abs(grad_x.sum()) < 1e-9), grad_beta   # each row of grad_x sums to 0
    ((1, 3), True, array([1., 0., 0.]))
    """
    g_out = as_float_array(grad_out, "grad_out")
    x = as_float_array(x, "x")
    if g_out.shape != x.shape:
        raise ValueError(f"grad_out has shape {g_out.shape} and x has shape {x.shape}; expected the same shape")
    gamma = np.ones(x.shape[-1], dtype=x.dtype) if gamma is None else as_float_array(gamma, "gamma")
    if gamma.shape != x.shape[-1:]:
        raise ValueError(f"gamma has shape {gamma.shape}; expected ({x.shape[-1]},), one per feature of x")
    mean = x.mean(axis=-1, keepdims=True)  # (..., 1)
    sigma = np.sqrt(((x - mean) ** 2).mean(axis=-1, keepdims=True) + eps)  # (..., 1)
    x_hat = (x - mean) / sigma  # (..., d)
    g = g_out * gamma  # the gradient with respect to x_hat: (..., d)
    grad_x = (g - g.mean(axis=-1, keepdims=True) - x_hat * (g * x_hat).mean(axis=-1, keepdims=True)) / sigma
    rows = tuple(range(x.ndim - 1))  # gamma and beta are shared by every row
    return grad_x.astype(x.dtype, copy=False), (g_out * x_hat).sum(axis=rows), g_out.sum(axis=rows)


def gelu_backward(grad_out, x):
    r"""Gradient of GPT-2's tanh GELU, ``gelu(x, approximate=True)``, with respect to ``x``.

    With :math:`u = \sqrt{2/\pi}\,(x + 0.044715\,x^3)`,
    :math:`\mathrm{GELU}(x) = \tfrac12 x (1 + \tanh u)`, so

    .. math:: \frac{d\,\mathrm{GELU}}{dx} = \tfrac12 (1 + \tanh u)
              + \tfrac12 x\,(1 - \tanh^2 u)\,\sqrt{2/\pi}\,(1 + 3 \cdot 0.044715\,x^2)

    >>> gelu_backward(np.ones(3), np.array([-10.0, 0.0, 10.0])).round(6)  # 0 far left, 1/2 at 0, 1 far right
    array([-0. ,  0.5,  1. ])
    """
    g = as_float_array(grad_out, "grad_out", min_ndim=0)
    x = as_float_array(x, "x", min_ndim=0)
    c = math.sqrt(2.0 / math.pi)
    t = np.tanh(c * (x + 0.044715 * x**3))
    slope = 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3 * 0.044715 * x * x)
    return (g * slope).astype(np.result_type(g, x), copy=False)


def _rows_sum(grad):
    return grad.reshape(-1, grad.shape[-1]).sum(axis=0)  # a bias is shared by every row


def feed_forward_backward(grad_out, x, W_1, W_2, b_1=None):
    r"""Gradients of ``FFN(x) = gelu_tanh(x W_1 + b_1) W_2 + b_2`` (the tiny GPT's feed-forward network).

    Backwards through each step of the forward pass: the second linear layer, the GELU
    (:func:`gelu_backward`), the first linear layer (:func:`~attn_helpers.backprop.linear_backward`).

    Returns ``grad_x (..., d_model)``; ``grads``: ``W_1``, ``b_1``, ``W_2``, ``b_2``.
    """
    pre = x @ W_1 + (0.0 if b_1 is None else b_1)  # (..., T, d_model) @ (d_model, d_ff) -> (..., T, d_ff)
    hidden = gelu(pre, approximate=True)  # (..., T, d_ff)
    grad_hidden, grad_W_2 = linear_backward(hidden, W_2, grad_out)  # (..., T, d_ff), (d_ff, d_model)
    grad_pre = gelu_backward(grad_hidden, pre)  # (..., T, d_ff)
    grad_x, grad_W_1 = linear_backward(x, W_1, grad_pre)  # (..., T, d_model), (d_model, d_ff)
    return grad_x, {"W_1": grad_W_1, "b_1": _rows_sum(grad_pre), "W_2": grad_W_2, "b_2": _rows_sum(grad_out)}


def _heads(x, a, num_heads, mask):
    """The attention sub-layer's forward pass, keeping what the backward pass needs."""
    queries = split_heads(x @ a["W_q"] + a["b_q"], num_heads)  # (..., T, d) @ (d, d) -> (..., h, T, d_h)
    keys = split_heads(x @ a["W_k"] + a["b_k"], num_heads)  # (..., h, T, d_h)
    values = split_heads(x @ a["W_v"] + a["b_v"], num_heads)  # (..., h, T, d_h)
    context, weights = scaled_dot_product_attention(queries, keys, values, mask=mask)  # (..., h, T, d_h)
    return queries, keys, values, weights, merge_heads(context)  # merged: (..., T, d)


def attention_layer_backward(grad_out, x, a, num_heads, mask=None):
    r"""Gradients of multi-head self-attention ``out = Concat(heads) W_o + b_o`` with biased projections.

    Backwards: the output projection (:func:`~attn_helpers.backprop.linear_backward`), the
    concatenation (split the gradient back into heads), every head's attention at once
    (:func:`~attn_helpers.backprop.attention_backward`: the head axis is a batch axis), the
    merge of the heads, and the three projections; ``x`` feeds all three, so its gradient is
    the sum of theirs.

    ``grad_out (..., T, d_model)``; ``x (..., T, d_model)``: the sub-layer's input (after the layer norm); ``a``:
    ``W_q``, ``W_k``, ``W_v``, ``W_o``, ``b_q``, ``b_k``, ``b_v``, ``b_o``. Returns ``grad_x (..., T, d_model)``;
    ``grads``: the gradient of each of the eight arrays.
    """
    queries, keys, values, weights, merged = _heads(x, a, num_heads, mask)
    grad_merged, grad_W_o = linear_backward(merged, a["W_o"], grad_out)  # (..., T, d), (d, d)
    grad_context = split_heads(grad_merged, num_heads)  # (..., h, T, d_h)
    grad_q, grad_k, grad_v = attention_backward(queries, keys, values, grad_context, mask=mask, weights=weights)
    grads = {"W_o": grad_W_o, "b_o": _rows_sum(grad_out)}
    grad_x = 0.0
    for name, grad_heads in (("q", grad_q), ("k", grad_k), ("v", grad_v)):
        grad_projected = merge_heads(grad_heads)  # (..., h, T, d_h) -> (..., T, d)
        grad_x_part, grads[f"W_{name}"] = linear_backward(x, a[f"W_{name}"], grad_projected)
        grads[f"b_{name}"] = _rows_sum(grad_projected)
        grad_x = grad_x + grad_x_part  # x feeds the queries, the keys and the values
    return grad_x, grads


def block_forward(x, a, num_heads, mask=None, eps=1e-5):
    """One pre-norm block as :func:`~attn_helpers.block.transformer_block` computes it, keeping what backward needs.

    Returns ``out (..., T, d_model)``; ``saved``: ``x``, ``normed_1``, ``middle`` (the stream after attention),
    ``normed_2``, ``weights``: what :func:`block_backward` reads.
    """
    normed_1 = layer_norm(x, a["norm_1_gamma"], a["norm_1_beta"], eps)
    *_, weights, merged = _heads(normed_1, a, num_heads, mask)
    middle = x + merged @ a["W_o"] + a["b_o"]  # the residual stream after attention: (..., T, d)
    normed_2 = layer_norm(middle, a["norm_2_gamma"], a["norm_2_beta"], eps)
    hidden = gelu(normed_2 @ a["W_1"] + a["b_1"], approximate=True)  # (..., T, d) @ (d, d_ff) -> (..., T, d_ff)
    out = middle + hidden @ a["W_2"] + a["b_2"]  # (..., T, d_ff) @ (d_ff, d) -> (..., T, d)
    return out, {"x": x, "normed_1": normed_1, "middle": middle, "normed_2": normed_2, "weights": weights}


def block_backward(grad_out, saved, a, num_heads, mask=None, eps=1e-5):
    r"""Gradients of one pre-norm block ``m = x + MHA(LN_1(x))``, ``out = m + FFN(LN_2(m))``.

    A residual connection copies the gradient: ``grad_m = grad_out + (the path through the
    FFN)``, ``grad_x = grad_m + (the path through attention)``.

    ``grad_out (..., T, d_model)``; ``saved``: what the forward pass kept (``x``, ``normed_1``, ``middle``,
    ``normed_2``); ``a``: the block's arrays (:func:`block_arrays`). Returns ``grad_x (..., T, d_model)``; ``grads``:
    one gradient per array of ``a``.
    """
    grad_normed_2, grads = feed_forward_backward(grad_out, saved["normed_2"], a["W_1"], a["W_2"], a["b_1"])
    grad_middle_ffn, grads["norm_2_gamma"], grads["norm_2_beta"] = layer_norm_backward(
        grad_normed_2, saved["middle"], a["norm_2_gamma"], eps)
    grad_middle = grad_out + grad_middle_ffn  # the residual: the gradient goes straight through, plus the FFN's
    grad_normed_1, attention_grads = attention_layer_backward(grad_middle, saved["normed_1"], a, num_heads, mask)
    grads.update(attention_grads)
    grad_x_attention, grads["norm_1_gamma"], grads["norm_1_beta"] = layer_norm_backward(
        grad_normed_1, saved["x"], a["norm_1_gamma"], eps)
    return grad_middle + grad_x_attention, grads


def _forward(params, ids, num_heads):
    """The whole model on a batch of token ids, ``(B, T)``, keeping what the backward pass needs."""
    embeddings = params["embeddings"]
    T, d_model = ids.shape[-1], embeddings.shape[1]
    mask = causal_mask(T)
    x = embeddings[ids] + positional_encoding(T, d_model, dtype=embeddings.dtype)  # (B, T, d_model)
    saved = []
    for n in range(_num_layers(params)):
        x, block_saved = block_forward(x, _block_dict(params, n), num_heads, mask)
        saved.append(block_saved)
    final = layer_norm(x, params["final_norm_gamma"], params["final_norm_beta"])  # (B, T, d_model)
    logits = final @ embeddings.T  # (B, T, d_model) @ (d_model, vocab) -> (B, T, vocab): the tied output layer
    return logits, {"mask": mask, "blocks": saved, "x": x, "final": final}


def loss_and_grads(params, ids, targets, num_heads):
    r"""Mean cross-entropy of the next-token predictions and its gradient for every parameter.

    The forward pass is :func:`~attn_helpers.kv_cache.decoder_forward`'s (for a batch); the
    backward pass runs it in reverse: cross-entropy, the tied output layer, the final layer
    norm, each block (:func:`block_backward`), and the embedding lookup. The embeddings get
    two contributions, as the output layer and as the input lookup, and they add.

    ``params``: :func:`decoder_params` of the model; ``ids, targets (B, T) or (T,)``: ``targets[..., t]`` is the token
    after ``ids[..., t]``. Returns ``loss``: nats per token; ``grads``: same keys and shapes as ``params``.
    """
    ids, targets = np.asarray(ids), np.asarray(targets)
    if ids.shape != targets.shape or ids.ndim not in (1, 2):
        raise ValueError(f"ids has shape {ids.shape} and targets {targets.shape}; expected the same shape, (B, T) "
                         "or (T,)")
    logits, saved = _forward(params, ids, num_heads)
    loss = cross_entropy(logits, targets)
    grad_logits = cross_entropy_backward(logits, targets)  # (softmax - onehot) / N: (B, T, vocab)
    embeddings = params["embeddings"]
    # The tied output layer: logits = final @ embeddings.T.
    grad_final, grad_embeddings_T = linear_backward(saved["final"], embeddings.T, grad_logits)
    grads = {"embeddings": grad_embeddings_T.T}
    grad_x, grads["final_norm_gamma"], grads["final_norm_beta"] = layer_norm_backward(
        grad_final, saved["x"], params["final_norm_gamma"])
    for n in reversed(range(_num_layers(params))):
        grad_x, block_grads = block_backward(grad_x, saved["blocks"][n], _block_dict(params, n), num_heads,
                                             saved["mask"])
        grads.update({f"blocks.{n}.{name}": grad for name, grad in block_grads.items()})
    # The input lookup: x = embeddings[ids] + positions (the sinusoidal positions have no parameters).
    grads["embeddings"] = grads["embeddings"] + embedding_backward(ids, grad_x, embeddings.shape[0])
    return loss, {name: grads[name].astype(params[name].dtype, copy=False) for name in params}


# --- training and evaluation --------------------------------------------------------------------

def windows(ids, context_length, starts):
    """Inputs ``ids[s : s + T]`` and targets ``ids[s + 1 : s + T + 1]`` for each start ``s``: ``(B, T)`` each."""
    ids = np.asarray(ids)
    offsets = np.asarray(starts)[:, None] + np.arange(context_length)  # (B, T)
    return ids[offsets], ids[offsets + 1]


@_one_thread
def train(decoder, train_ids, steps, *, batch_size=16, context_length=64, learning_rate=3e-3, seed=SEED,
          warmup=50, decay=True, callback=None):
    """Train ``decoder`` with Adam on random windows of ``train_ids``; return the trained decoder and the losses.

    Each step draws ``batch_size`` windows of ``context_length`` tokens (seeded), computes
    :func:`loss_and_grads` and takes one :func:`~attn_helpers.training.adam_step`. The
    learning rate rises linearly over ``warmup`` steps, then (with ``decay``) falls along a
    cosine to a tenth of its peak.

    Returns ``decoder``: a new decoder; the one passed in is not changed; ``losses (steps,)``: the training loss of
    each step's batch, in nats per token.
    """
    steps = as_positive_int(steps, "steps", allow_zero=True)
    num_heads = decoder.blocks[0].num_heads
    params, state = decoder_params(decoder), {}
    train_ids = np.asarray(train_ids)
    rng = np.random.default_rng(seed)
    losses = np.zeros(steps)
    for step in range(steps):
        starts = rng.integers(0, len(train_ids) - context_length - 1, size=batch_size)
        loss, grads = loss_and_grads(params, *windows(train_ids, context_length, starts), num_heads)
        rate = learning_rate * min(1.0, (step + 1) / max(warmup, 1))
        if decay and step >= warmup:
            rate *= 0.1 + 0.45 * (1 + math.cos(math.pi * (step - warmup) / max(steps - warmup, 1)))
        adam_step(params, grads, state, learning_rate=rate, beta1=0.9, beta2=0.99)
        losses[step] = loss
        if callback is not None:
            callback(step, loss)
    return decoder_from_params(params, num_heads), losses


def _eval_windows(ids, context_length):
    ids = np.asarray(ids)
    count = (len(ids) - 1) // context_length
    return windows(ids, context_length, np.arange(count) * context_length)


@_one_thread
def mean_loss(decoder, ids, context_length=64, batch_size=64):
    """Mean cross-entropy, nats per token, of the decoder's predictions on ``ids``.

    ``ids`` is cut into consecutive windows of ``context_length`` tokens (the last partial
    window is dropped); every token of a window is predicted from the tokens before it in
    its window.
    """
    inputs, targets = _eval_windows(ids, context_length)
    params = {"embeddings": decoder.embeddings, "final_norm_gamma": decoder.final_norm_gamma,
              "final_norm_beta": decoder.final_norm_beta}
    for n, block in enumerate(decoder.blocks):
        params.update({f"blocks.{n}.{name}": array for name, array in block_arrays(block).items()})
    total = 0.0
    for start in range(0, len(inputs), batch_size):
        logits, _ = _forward(params, inputs[start:start + batch_size], decoder.blocks[0].num_heads)
        total += cross_entropy(logits, targets[start:start + batch_size]) * len(inputs[start:start + batch_size])
    return total / len(inputs)


def ngram_losses(train_ids, ids, vocab_size, context_length=64, alpha=1.0):
    r"""The unigram and bigram baselines' mean cross-entropy on the same targets as :func:`mean_loss`.

    Unigram: :math:`p(b) = (n_b + 1) / (N + V)` (add-one smoothing). Bigram:
    :math:`p(b \mid a) = (n_{ab} + \alpha\, p(b)) / (n_a + \alpha)`, the counts of the training
    text smoothed towards the unigram, so a pair never seen in training is not impossible.
    The first token of each window has no previous token inside the window: as for the model,
    the bigram is given the token before it all the same (it sees one token back; the model
    up to 63).

    Returns ``losses``: ``{"unigram": float, "bigram": float}``, nats per token.
    """
    train_ids, ids = np.asarray(train_ids), np.asarray(ids)
    unigram = (np.bincount(train_ids, minlength=vocab_size) + 1.0) / (len(train_ids) + vocab_size)  # (V,)
    pairs = np.zeros((vocab_size, vocab_size))
    np.add.at(pairs, (train_ids[:-1], train_ids[1:]), 1.0)  # pairs[a, b]: how often b follows a
    bigram = (pairs + alpha * unigram) / (pairs.sum(axis=1, keepdims=True) + alpha)  # each row sums to 1
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
        if isinstance(top_p, bool) or not isinstance(top_p, (int, float, np.floating, np.integer)) or not (
                0 < top_p <= 1):
            raise ValueError(f"top_p must be a number in (0, 1]; got {top_p!r}")
        probs = np.take_along_axis(softmax(out, axis=-1), order, axis=-1)  # (..., vocab), sorted
        before = np.cumsum(probs, axis=-1) - probs  # the probability of the tokens ranked above each one
        drop = np.zeros(z.shape, dtype=bool)
        np.put_along_axis(drop, order, before >= top_p, axis=-1)
        out[drop] = -np.inf
    return out


def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    r"""The distribution :func:`sample_next` draws from: ``softmax(filter_logits(logits / temperature))``.

    ``temperature=0`` is greedy: all the probability on the highest-scoring token (the
    lowest id among ties). A temperature below 1 sharpens the distribution, above 1
    flattens it (notebook 03). Top-k and top-p act on the tempered scores.

    ``logits (vocab,)``. Returns ``probs (vocab,)``.

    >>> next_token_probs(np.log([0.5, 0.3, 0.2]), top_k=2).round(3)
    array([0.625, 0.375, 0.   ])
    >>> next_token_probs(np.log([0.5, 0.3, 0.2]), temperature=0)
    array([1., 0., 0.])
    """
    z = as_float_array(logits, "logits", min_ndim=1)
    if z.ndim != 1:
        raise ValueError(f"logits must have shape (vocab,); got shape {z.shape}")
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float, np.floating, np.integer)) or (
            temperature < 0):
        raise ValueError(f"temperature must be a number >= 0; got {temperature!r}")
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
    probs = next_token_probs(logits, temperature, top_k, top_p)
    if temperature == 0:
        return int(np.argmax(probs))
    if not isinstance(rng, np.random.Generator):
        rng = np.random.default_rng(SEED if rng is None else rng)
    cumulative = np.cumsum(probs)
    return int(min(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"), len(probs) - 1))


@_one_thread
def generate_ids(decoder, prompt_ids, max_new_tokens, *, context_length=64, temperature=1.0, top_k=None,
                 top_p=None, rng=None, use_cache=True):
    """Append ``max_new_tokens`` sampled tokens to ``prompt_ids``; return all the ids.

    The model sees at most ``context_length`` tokens: when the window is full it jumps
    forward and keeps the last half. With ``use_cache`` the window's keys and values stay
    in a KV cache (notebook 13) and each step runs only the newest token; at a jump the
    cache is refilled from the kept half. Both ways compute the same scores.
    """
    ids = [int(i) for i in prompt_ids]
    if not ids:
        raise ValueError("prompt_ids is empty; expected at least one token")
    if not isinstance(rng, np.random.Generator):
        rng = np.random.default_rng(SEED if rng is None else rng)
    start = max(0, len(ids) - context_length)  # the model sees ids[start:]
    cache, fed = (decoder.empty_cache(), start) if use_cache else (None, start)
    for _ in range(as_positive_int(max_new_tokens, "max_new_tokens", allow_zero=True)):
        if len(ids) - start > context_length:  # the window is full: keep its second half
            start = len(ids) - context_length // 2
            cache, fed = (decoder.empty_cache(), start) if use_cache else (None, start)
        if use_cache:
            logits = decoder_forward(decoder, ids[fed:], cache)[-1]  # only the tokens the cache has not seen
            fed = len(ids)
        else:
            logits = decoder_forward(decoder, ids[start:])[-1]  # the whole window again
        ids.append(sample_next(logits, temperature, top_k, top_p, rng))
    return ids


@dataclasses.dataclass(frozen=True, eq=False)
class TinyGPT:
    """A trained tiny GPT with its tokenizer: ``logits``, ``generate``, ``corpus_split``.

    ``record``: how it was trained: configuration, steps, seconds, training losses.
    """

    decoder: Decoder
    tokenizer: BPETokenizer
    context_length: int = 64
    record: dict = dataclasses.field(default_factory=dict)

    def logits(self, ids):
        """Scores of the next token after each position, ``(T, vocab)``, for at most ``context_length`` ids."""
        ids = list(ids)
        if len(ids) > self.context_length:
            raise ValueError(f"ids has {len(ids)} tokens; the model reads at most {self.context_length}")
        return decoder_forward(self.decoder, ids)

    def generate(self, prompt, max_new_tokens, temperature=1.0, top_k=None, top_p=None, seed=None, use_cache=True):
        """The prompt followed by ``max_new_tokens`` sampled tokens, as text (``seed`` default: ``SEED``)."""
        if not isinstance(prompt, str) or not prompt:
            raise ValueError(f"prompt must be a non-empty str; got {prompt!r}")
        ids = generate_ids(self.decoder, self.tokenizer.encode(prompt), max_new_tokens,
                           context_length=self.context_length, temperature=temperature, top_k=top_k, top_p=top_p,
                           rng=np.random.default_rng(SEED if seed is None else seed), use_cache=use_cache)
        return self.tokenizer.decode(ids)

    @staticmethod
    def corpus_split(split):
        """The training or validation text (see :func:`corpus_split`)."""
        return corpus_split(split)


def save_tiny_gpt(model, path=WEIGHTS_PATH):
    """Write the model's float32 weights, its merges and its record to one ``.npz``; return its SHA-256."""
    arrays = {name: np.asarray(a, dtype=np.float32) for name, a in decoder_params(model.decoder).items()}
    arrays["merges"] = np.asarray(model.tokenizer.merges, dtype=np.int32).reshape(-1, 2)
    record = {**model.record, "context_length": model.context_length,
              "num_heads": model.decoder.blocks[0].num_heads}
    np.savez_compressed(path, record=np.array(json.dumps(record)), **arrays)
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


def load_tiny_gpt(path=WEIGHTS_PATH, sha256=None):
    """The tiny GPT that ``tools/train_tiny_gpt.py`` trained on *Pride and Prejudice*, checked by its SHA-256.
    """
    path = pathlib.Path(path)
    expected = WEIGHTS_SHA256 if sha256 is None else sha256
    if not path.is_file() or (expected is not None
                              and hashlib.sha256(path.read_bytes()).hexdigest() != expected):
        raise RuntimeError(f"The tiny GPT's weights {path.name} are missing or damaged (their SHA-256 does not "
                           "match): restore the file from the repository, or rebuild it with "
                           "`python tools/train_tiny_gpt.py`.")
    with np.load(path) as data:
        arrays = {name: data[name] for name in data.files}
    record = json.loads(str(arrays.pop("record")))
    tokenizer = BPETokenizer(arrays.pop("merges").tolist())
    decoder = decoder_from_params(arrays, record["num_heads"])
    return TinyGPT(decoder, tokenizer, record["context_length"], record)



# --- from GPT-2 to Llama ------------------------------------------------------------------------

#: Llama 2 7B's published configuration (Touvron et al. 2023, Table 1; meta-llama/Llama-2-7b-hf
#: config.json: vocab_size 32000, hidden_size 4096, intermediate_size 11008, num_hidden_layers 32,
#: num_attention_heads 32, num_key_value_heads 32, rms_norm_eps 1e-5 (1e-6 in the first release),
#: tie_word_embeddings false, no biases).
LLAMA2_7B = {"num_layers": 32, "d_model": 4096, "num_heads": 32, "num_kv_heads": 32, "d_ff": 11008,
             "vocab_size": 32000, "context_length": 4096}


def rms_norm(x, gamma=None, eps=1e-6):
    r"""RMSNorm (Zhang & Sennrich 2019, used by Llama): divide each token by its root mean square.

    .. math:: \mathrm{RMSNorm}(x) = \gamma \odot \frac{x}{\sqrt{\frac1d \sum_c x_c^2 + \varepsilon}}

    Layer norm without the mean: nothing is subtracted and there is no ``beta``.

    >>> rms_norm(np.array([[3.0, -4.0]])).round(4)   # the root mean square of (3, -4) is sqrt(12.5)
    array([[ 0.8485, -1.1314]])
    """
    x = as_float_array(x, "x")
    out = x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps)  # (..., d): root mean square 1 per token
    return out if gamma is None else out * gamma


def silu(x):
    r"""SiLU (swish): :math:`x\,\sigma(x)`, a smooth ReLU like GELU.

    >>> silu(np.array([-1.0, 0.0, 1.0])).round(4)
    array([-0.2689,  0.    ,  0.7311])
    """
    x = as_float_array(x, "x", min_ndim=0)
    return x / (1.0 + np.exp(-x))


def swiglu_ffn(x, W_gate, W_up, W_down):
    r"""Llama's feed-forward network (Shazeer 2020): a SiLU-gated product of two projections, then down.

    .. math:: \mathrm{FFN}(x) = \left(\mathrm{SiLU}(x W_{gate}) \odot x W_{up}\right) W_{down}

    Three matrices instead of two and no biases; Llama keeps the parameter count of a
    ``4 d_model`` GELU network by making ``d_ff`` about ``8/3 d_model`` (11008 for 4096).

    >>> x = np.ones((2, 4))
    >>> swiglu_ffn(x, np.ones((4, 6)), np.ones((4, 6)), np.ones((6, 4))).shape
    (2, 4)
    """
    gate = silu(x @ W_gate)  # (..., T, d_model) @ (d_model, d_ff) -> (..., T, d_ff)
    up = x @ W_up  # (..., T, d_ff)
    return (gate * up) @ W_down  # (..., T, d_ff) @ (d_ff, d_model) -> (..., T, d_model)


def llama_parameter_count(config):
    """Parameters of a Llama-style model from its configuration: no biases, RMSNorm, SwiGLU, untied output.

    Per layer: ``W_q, W_o`` (``d x d``), ``W_k, W_v`` (``d x h_kv d_h``), three SwiGLU matrices
    (``d x d_ff``) and two RMSNorm gains; then the token embeddings, one final RMSNorm and
    an output layer of its own. RoPE has no parameters.

    >>> llama_parameter_count(LLAMA2_7B)["total"]
    6738415616
    """
    d, layers, vocab = config["d_model"], config["num_layers"], config["vocab_size"]
    kv_width = d // config["num_heads"] * config["num_kv_heads"]
    attention = 2 * d * d + 2 * d * kv_width  # W_q, W_o; W_k, W_v (narrower with grouped-query attention)
    feed_forward_ = 3 * d * config["d_ff"]  # W_gate, W_up, W_down
    counts = {"token_embeddings": vocab * d, "attention": layers * attention, "feed_forward": layers * feed_forward_,
              "norms": layers * 2 * d + d, "output_head": vocab * d}
    counts["total"] = sum(counts.values())
    return counts
