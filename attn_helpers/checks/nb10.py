"""Checkers for notebook 10 (the transformer block): layer norm, a pre-norm block, a prediction, GPT-2's size."""

from __future__ import annotations

import copy
import dataclasses
import numbers
import re

import numpy as np

from ..block import feed_forward, init_block_params, layer_norm, parameter_count, residual_stream, transformer_block
from ..core import causal_mask
from ..examples import GPT2_FAMILY, creature_block_example
from ..multihead import multi_head_attention
from ._grader import (
    Case,
    Verdict,
    Wrong,
    call_quietly,
    grade_function,
    read_answer,
    read_filled,
    register_solution,
    shows_verdict,
    two_slips,
)
from ._predict import is_complex

__all__ = ["check_layer_norm", "check_pre_norm_block", "check_decoder_changed_rows", "check_gpt2_parameter_count"]


# Exercise 10.1: layer norm
@register_solution("my_layer_norm")
def my_layer_norm(x, gamma, beta, eps=1e-5):
    """Normalise each token (each row) over its features, then scale by gamma and shift by beta."""
    mean = x.mean(axis=-1, keepdims=True)                    # (..., T, 1): one mean per token
    variance = ((x - mean) ** 2).mean(axis=-1, keepdims=True)  # (..., T, 1): divide by d, not d - 1
    normalised = (x - mean) / np.sqrt(variance + eps)        # eps inside the square root
    return gamma * normalised + beta                         # (d_model,) broadcasts over the tokens


def _ln_cases():
    rng = np.random.default_rng(10)
    x = rng.standard_normal((5, 4)) * 3 + 1
    gamma, beta = rng.uniform(0.5, 2.0, 4), rng.standard_normal(4)
    square = rng.standard_normal((4, 4)) * 2
    tiny = np.array([[0.001, -0.002, 0.0015, 0.0], [1.0, 2.0, 3.0, 4.0], [7.0, 7.0, 7.0, 7.0]])
    batch = rng.standard_normal((2, 3, 6))
    return [
        Case((x, gamma, beta), label="x of shape (5, 4) with random gamma and beta"),
        Case((square, gamma, beta), label="a square x of shape (4, 4)"),
        Case((tiny, gamma, beta), label="a token with tiny features (variance 1.4e-6, below eps), a plain token "
                                        "and a constant token"),
        Case((batch, np.linspace(0.5, 1.5, 6), np.linspace(-1, 1, 6)), label="a batch of shape (2, 3, 6)"),
    ]


def _layer_norm_with(x, g, b, eps=1e-5, *, axis=-1, ddof=0, eps_at="inside", root=True, affine="gamma, beta"):
    """Layer norm with the options a learner gets wrong; the defaults compute it right."""
    mean = x.mean(axis=axis, keepdims=True)
    variance = x.var(axis=axis, ddof=ddof, keepdims=True)
    spread = {"inside": np.sqrt(variance + eps) if root else variance + eps,
              "outside": (np.sqrt(variance) if root else variance) + eps}[eps_at]
    normalised = (x - mean) / spread
    return {"gamma, beta": g * normalised + b, "swapped": b * normalised + g, "none": normalised}[affine]


#: The slips of 10.3 that can come together, each with its hint; two at once get both (``two_slips``). Without the
#: root, where eps goes makes no difference, so "no root" fixes eps_at and is never paired with "eps outside".
_LN_SLIPS = {
    "axis 0": ({"axis": 0}, "you normalised each feature over the tokens (axis=0): that is batch-norm's direction, "
                            "and it makes a token depend on the other tokens. Layer norm takes the statistics of each "
                            "token over its features: axis=-1"),
    "ddof": ({"ddof": 1}, "you used the unbiased variance (dividing by d - 1, as ddof=1 or a statistics textbook "
                          "does). Layer norm divides by d: np.var's default, or ((x - mean) ** 2).mean(...)"),
    "eps outside": ({"eps_at": "outside"}, "eps goes inside the square root: (x - mean) / sqrt(variance + eps). With "
                                           "eps outside, a token whose variance is below eps is blown up to unit "
                                           "length"),
    "no root": ({"root": False, "eps_at": "inside"},
                "you divided by the variance: divide by its square root, the standard deviation"),
    "no affine": ({"affine": "none"}, "you normalised but forgot the learned scale and shift: multiply by gamma, "
                                      "then add beta"),
    "swapped": ({"affine": "swapped"}, "gamma and beta are swapped: gamma multiplies (scale), beta is added (shift)"),
}

_LN_WRONGS = [
    *two_slips(_layer_norm_with, _LN_SLIPS),
    Wrong(lambda x, g, b, eps=1e-5: _layer_norm_with(x, g, b, eps, axis=1),
          "axis=1 is the feature axis of a (T, d) matrix but the token axis of a batch (B, T, d): use axis=-1, "
          "the last axis, so that the same code serves both"),
    Wrong(lambda x, g, b, eps=1e-5: g * x / np.sqrt(x.var(-1, keepdims=True) + eps) + b,
          "subtract each token's mean before dividing: (x - mean) / sqrt(variance + eps)"),
    Wrong(lambda x, g, b, eps=1e-5: g * ((x - x.mean(-1)) / np.sqrt(x.var(-1) + eps)) + b,
          "without keepdims=True the mean has shape (T,), which numpy lines up with the FEATURE axis: "
          "use x.mean(axis=-1, keepdims=True), shape (T, 1), one number per token"),
    Wrong(lambda x, g, b, eps=1e-5: g * (x - x.mean()) / np.sqrt(x.var() + eps) + b,
          "without axis, x.mean() and x.var() take ONE mean and variance over the whole array, every token "
          "together: give each token its own, x.mean(axis=-1, keepdims=True)"),
]


# The slip that hides best: eps left out (or BERT's 1e-12 typed in), visible only in the 6th digit.
def _eps_slip(fn):
    """A verdict when ``fn`` matches layer norm with no eps or eps = 1e-12 on the first case, else None."""
    case = _ln_cases()[0]
    got, err = call_quietly(fn, *(np.array(a, copy=True) for a in case.args))
    if err is not None:
        return None
    got, problem = read_answer(got)  # never hangs or raises on a result that does when read as numbers
    if problem:
        return None
    expected = my_layer_norm(*case.args)
    if got.shape != expected.shape or np.allclose(got, expected, rtol=1e-6, atol=1e-7):
        return None
    if not np.allclose(got, my_layer_norm(*case.args, eps=1e-12), rtol=1e-9, atol=1e-12):
        return None
    worst = np.unravel_index(np.argmax(np.abs(got - expected)), got.shape)
    gap = float(got[worst] - expected[worst])
    digits = max(4, int(np.ceil(-np.log10(abs(gap) / max(abs(expected[worst]), 1e-300)))) + 1)  # shows the gap
    return Verdict(
        False, f"on {case.label}, the values differ by {gap:.1e} (at index {tuple(int(j) for j in worst)}: "
               f"got {got[worst]:.{digits}g}, expected {expected[worst]:.{digits}g})",
        "eps is missing, or far smaller than the eps argument (BERT's 1e-12 belongs to another model): divide by "
        "np.sqrt(variance + eps) with the function's own eps (default 1e-5). The gap is tiny here, but a token "
        "whose variance is near or below eps (a nearly constant one) is blown up, or gives 0/0")


@shows_verdict
def check_layer_norm(fn):
    """Grade ``fn(x, gamma, beta, eps=1e-5)``: layer normalization over the last axis."""
    if callable(fn):
        _, err = call_quietly(fn, np.ones((5, 4)), np.ones(4), np.zeros(4))
        if isinstance(err, ValueError) and "broadcast" in str(err):
            return Verdict(False, f"on x of shape (5, 4), your function raised ValueError: {err}",
                           "x.mean(axis=-1) has shape (5,), which does not line up with x of shape (5, 4): keep "
                           "the axis with keepdims=True (shape (5, 1)), one mean per token")
        slip = _eps_slip(fn)
        if slip is not None:
            return slip
    return grade_function(fn, my_layer_norm, _ln_cases(), what="my_layer_norm", wrongs=_LN_WRONGS, rtol=1e-6,
                          atol=1e-7, shape_hint="layer norm keeps the shape of x",
                          success="each token gets mean 0 and variance 1 over its features, then gamma and beta.")


# Exercise 10.2: one pre-norm block
@register_solution("my_pre_norm_block")
def my_pre_norm_block(x, p):
    """x + MHA(LN_1(x)), then x + FFN(LN_2(x)): the sub-layers read a normalised copy, the stream stays raw."""
    h = layer_norm(x, p.norm_1_gamma, p.norm_1_beta, p.eps)
    attended, _ = multi_head_attention(h, p.W_q, p.W_k, p.W_v, p.W_o, p.num_heads)
    x = x + attended                                   # residual: add to the stream
    h = layer_norm(x, p.norm_2_gamma, p.norm_2_beta, p.eps)
    return x + feed_forward(h, p.W_1, p.W_2)           # residual again


def _block_params(seed, d_model=8, num_heads=2):
    """Random block parameters with random gammas and betas, so that mixing up the two norms shows."""
    p = init_block_params(d_model, num_heads, d_ff=3 * d_model, rng=seed, dtype=np.float64)
    rng = np.random.default_rng(seed + 100)
    return dataclasses.replace(p, norm_1_gamma=rng.uniform(0.5, 1.5, d_model), norm_1_beta=rng.normal(0, 0.3, d_model),
                               norm_2_gamma=rng.uniform(0.5, 1.5, d_model), norm_2_beta=rng.normal(0, 0.3, d_model))


def _block_cases():
    rng = np.random.default_rng(11)
    return [
        Case((rng.standard_normal((5, 8)), _block_params(1)), label="x of shape (5, 8), 2 heads"),
        Case((rng.standard_normal((3, 12)) * 2, _block_params(2, 12, 3)), label="x of shape (3, 12), 3 heads"),
        Case((rng.standard_normal((2, 4, 8)), _block_params(3)), label="a batch x of shape (2, 4, 8)"),
    ]


def _ln(x, p, which):
    return layer_norm(x, getattr(p, f"norm_{which}_gamma"), getattr(p, f"norm_{which}_beta"), p.eps)


def _mha(x, p):
    return multi_head_attention(x, p.W_q, p.W_k, p.W_v, p.W_o, p.num_heads)[0]


def _ffn(x, p):
    return feed_forward(x, p.W_1, p.W_2)


def _normalised_stream(x, p):
    x = _ln(x, p, 1)
    x = x + _mha(x, p)
    x = _ln(x, p, 2)
    return x + _ffn(x, p)


_BLOCK_WRONGS = [
    Wrong(lambda x, p: transformer_block(x, p, norm_first=False)[0],
          "that is the post-norm block, LN(x + MHA(x)): in a pre-norm block the sub-layer reads LN(x) and its "
          "output is added to the raw x, which is never normalised"),
    Wrong(lambda x, p: residual_stream(x, [p], residual=False)[-1],
          "no residual connections: add each sub-layer's output to its input, x = x + MHA(LN(x))"),
    Wrong(lambda x, p: _ffn(_ln(x + _mha(_ln(x, p, 1), p), p, 2), p),
          "the second residual is missing: x + FFN(LN_2(x)), not FFN(LN_2(x)) alone"),
    Wrong(lambda x, p: x + _mha(_ln(x, p, 1), p) + _ffn(_ln(x, p, 2), p),
          "the feed-forward network must read the stream AFTER attention has added to it: compute "
          "x = x + MHA(LN_1(x)) first, then x + FFN(LN_2(x)) with that new x"),
    Wrong(_normalised_stream,
          "you overwrote the stream with its normalised copy (x = LN(x)), so the residual adds to LN(x). Keep x "
          "raw: h = LN(x), then x = x + MHA(h)"),
    Wrong(lambda x, p: (lambda y: y + _ffn(_ln(y, p, 1), p))(x + _mha(_ln(x, p, 1), p)),
          "both sub-layers used norm_1's gamma and beta: the feed-forward sub-layer has its own, norm_2_gamma "
          "and norm_2_beta"),
    Wrong(lambda x, p: (lambda y: y + _mha(_ln(y, p, 2), p))(x + _ffn(_ln(x, p, 1), p)),
          "the order is attention first (tokens exchange information), then the feed-forward network"),
    Wrong(lambda x, p: (lambda y: y + feed_forward(_ln(y, p, 2), p.W_1, p.W_2, activation="relu"))(
              x + _mha(_ln(x, p, 1), p)),
          "your feed-forward network uses ReLU: this block's (GPT-2's) uses GELU, feed_forward's default; "
          "call feed_forward(h, p.W_1, p.W_2) without choosing another activation"),
    Wrong(lambda x, p: transformer_block(x, p, mask=causal_mask(x.shape[-2]))[0],
          "you applied a causal mask: this exercise's block is an encoder block in which every token sees every "
          "other, so call multi_head_attention without a mask"),
    Wrong(lambda x, p: x + _ffn(_ln(x, p, 2), p),
          "there is no attention in your block: first x = x + MHA(LN_1(x)), where the tokens exchange "
          "information, then x + FFN(LN_2(x))"),
]


def _copy_params_and_watch(fn, changed):
    """``fn`` called with a deep copy of the parameters; the names of the fields it changed go to ``changed``."""
    def on_a_copy(x, p):
        mine = copy.deepcopy(p)
        try:
            return fn(x, mine)
        finally:
            for field in dataclasses.fields(p):
                before, after = getattr(p, field.name), getattr(mine, field.name)
                if not np.array_equal(np.asarray(before), np.asarray(after)) and field.name not in changed:
                    changed.append(field.name)
    return on_a_copy


@shows_verdict
def check_pre_norm_block(fn):
    """Grade ``fn(x, p)``: one pre-norm block (no biases), returning the block's output only."""
    if not callable(fn):
        return grade_function(fn, my_pre_norm_block, [], what="my_pre_norm_block")
    changed = []  # the learner's function gets a copy of p: the reference and the known slips use the original
    unpack = ("multi_head_attention returns (out, weights): unpack it, attended, _ = ...; the block returns the "
              "output only")
    verdict = grade_function(
        _copy_params_and_watch(fn, changed), my_pre_norm_block, _block_cases(), what="my_pre_norm_block",
        wrongs=_BLOCK_WRONGS, rtol=1e-5, atol=1e-6, shape_hint="a block returns the same shape as its input x",
        hints={"tuple": unpack}, success="pre-norm: each sub-layer reads a normalised copy and adds its result to "
                                         "the raw stream.")
    if "inhomogeneous" in verdict.message or "with a sequence" in verdict.message:  # x + (out, weights)
        return Verdict(False, verdict.message, f"x + multi_head_attention(...) adds a tuple: {unpack}")
    if "could not be broadcast" in verdict.message and re.search(r"\(\d+,(\d+),\1\)", verdict.message):
        return Verdict(False, verdict.message, "you added the attention weights, (heads, T, T), to the stream: "
                                               "multi_head_attention returns (out, weights), and out is the first")
    if changed:
        return Verdict(False, f"your function changed the parameters it was given (p.{', p.'.join(changed)}) "
                              "in place",
                       "a block reads its parameters and never writes to them: compute new arrays (h = ...) "
                       "instead of assigning into p's arrays")
    return verdict


# Exercise 10.3: predict, then run: which outputs of a decoder block change?
def changed_rows(position, causal=True, example=None):
    """The output rows of the example's first (pre-norm) block that change when token ``position`` is negated.

    >>> changed_rows(2)
    [2, 3, 4, 5, 6, 7]
    >>> changed_rows(2, causal=False)
    [0, 1, 2, 3, 4, 5, 6, 7]
    """
    example = creature_block_example(num_blocks=1) if example is None else example
    X, params = example["X"], example["blocks"][0]
    changed = X.copy()
    changed[position] = -X[position]
    mask = causal_mask(len(X)) if causal else None
    before, _ = transformer_block(X, params, mask=mask)
    after, _ = transformer_block(changed, params, mask=mask)
    return [int(i) for i in np.flatnonzero(np.abs(after - before).max(axis=-1) > 1e-6)]


@shows_verdict
def check_decoder_changed_rows(prediction, position=2):
    """Compare the learner's predicted list of changed rows with what the decoder block really does."""
    T = len(creature_block_example(num_blocks=0)["X"])
    prediction, problem = read_filled(prediction, "my_prediction", numbers=False, example="the positions you "
                                      "expect to change, for example [0, 1] (a list of integers)")
    if problem is not None:
        return problem
    if isinstance(prediction, (numbers.Integral, np.integer)) and not isinstance(prediction, bool):
        prediction = [prediction]
    try:
        if is_complex(prediction) or any(is_complex(i) for i in prediction):  # int() would drop the imaginary part
            return Verdict(False, f"my_prediction contains complex numbers; positions are integers 0 to {T - 1}",
                           "for example [0, 1, 2]")
        predicted = sorted({int(i) for i in prediction})
        if any(isinstance(i, bool) or int(i) != i for i in prediction):
            raise ValueError
    except (TypeError, ValueError, OverflowError):
        return Verdict(False, f"my_prediction should be a list of positions (integers 0 to {T - 1}); "
                              f"got {type(prediction).__name__} {prediction!r:.60}",
                       "for example [0, 1, 2]")
    if any(not 0 <= i < T for i in predicted):
        return Verdict(False, f"positions run from 0 to {T - 1}; you wrote {predicted}", "one position per token")
    actual = changed_rows(position)
    if predicted == actual:
        return Verdict(True, f"rows {actual} change. Token {position} is seen by itself and by every later token; "
                             "the earlier rows cannot see it through the causal mask, and nothing else in the block "
                             "mixes tokens.")
    hints = {
        (position,): "the changed token's own row does change, but so does every row that may attend to it: "
                     "in a decoder, each LATER token can see it",
        tuple(range(position + 1)): "reversed: with the causal mask, token i sees keys j <= i, so token "
                                    f"{position} is seen by the tokens AFTER it, not before it",
        tuple(range(position)): "reversed, and the changed token's own row changes too",
        tuple(range(T)): "that is an encoder block (no mask, every token sees every other). With the causal mask "
                         "the earlier tokens cannot see the change",
        (): "the token's own output row changes at least: the block reads its new input (residual, attention, "
            "feed-forward)",
    }
    hint = hints.get(tuple(predicted), "row i changes if it can attend to the changed token (mask[i, j] is True), "
                                       "or if it IS the changed token")
    return Verdict(False, f"you predicted rows {predicted}; the block changed rows {actual}", hint)


# Exercise 10.4: GPT-2 small's parameter count, block by block
@register_solution("my_gpt2_parameter_count")
def my_gpt2_parameter_count(config):
    """Count GPT-2's parameters from its configuration, one block first (d_ff = 4 d_model, biases, tied)."""
    d, L = config["d_model"], config["num_layers"]
    d_ff = 4 * d
    attention = 4 * (d * d + d)                 # W_q, W_k, W_v, W_o: (d, d) each, plus a bias of d
    feed_forward = (d * d_ff + d_ff) + (d_ff * d + d)   # W_1 (d, d_ff) + b_1, W_2 (d_ff, d) + b_2
    layer_norms = 2 * (2 * d)                   # two layer norms, each a gamma and a beta of d
    per_block = attention + feed_forward + layer_norms
    embeddings = config["vocab_size"] * d + config["context_length"] * d   # token table + position table
    final_norm = 2 * d                          # GPT-2's last layer norm, after the final block
    return L * per_block + embeddings + final_norm   # tied: the output layer reuses the token table


def _tiny_config():
    return {"num_layers": 2, "d_model": 8, "num_heads": 2, "vocab_size": 11, "context_length": 5}


def _count_cases():
    return [
        Case((dict(GPT2_FAMILY["small"]),), label="GPT-2 small"),
        Case((_tiny_config(),), label="a tiny model: 2 layers, d_model 8, vocabulary 11, context 5"),
        Case((dict(GPT2_FAMILY["medium"]),), label="GPT-2 medium"),
    ]


def _counts(config, **changes):
    """parameter_count of the GPT-2-style model with ``config``'s sizes, with ``changes`` to its defaults."""
    sizes = {key: config[key] for key in ("num_layers", "d_model", "num_heads", "vocab_size", "context_length")}
    return parameter_count({**sizes, **changes})


def _count(config, **changes):
    return _counts(config, **changes)["total"]


def _without(config, *parts):
    counts = _counts(config)
    return counts["total"] - sum(counts[part] for part in parts)


_COUNT_WRONGS = [
    Wrong(lambda c: _count(c, bias=False),
          "the biases are missing: GPT-2's six projections (W_q, W_k, W_v, W_o, W_1, W_2) each have a bias, one "
          "number per output feature"),
    Wrong(lambda c: _without(c, "final_norm"),
          "GPT-2 has one more layer norm after the last block (a gamma and a beta of d_model each)"),
    Wrong(lambda c: _without(c, "layer_norms", "final_norm"),
          "the layer norms are missing: two per block plus a final one, each a gamma and a beta of d_model"),
    Wrong(lambda c: _without(c, "layer_norms"),
          "4 * d_model numbers per block are missing: the two layer norms inside each block (a gamma and a beta "
          "of d_model each), or the four biases of attention (W_q, W_k, W_v and W_o each have one of d_model): "
          "the two give the same total, so check both"),
    Wrong(lambda c: _count(c) - c["num_layers"] * 2 * c["d_model"] - c["d_model"],
          "a layer norm has TWO vectors of d_model numbers: gamma (scale) and beta (shift)"),
    Wrong(lambda c: _count(c, tied_embeddings=False),
          "GPT-2 ties its embeddings: the output layer reuses the token embedding table, so count that table once"),
    Wrong(lambda c: _count(c, learned_positions=False),
          "GPT-2 learns its position embeddings: a table of context_length x d_model"),
    Wrong(lambda c: _without(c, "token_embeddings", "position_embeddings"),
          "the embedding tables are parameters too: vocab_size x d_model for tokens, context_length x d_model for "
          "positions"),
    Wrong(lambda c: _count(c, d_ff=c["d_model"]),
          "the feed-forward network widens to d_ff = 4 * d_model in between: W_1 is (d_model, 4 d_model)"),
    Wrong(lambda c: _count(c, d_ff=3 * c["d_model"]),
          "GPT-2's feed-forward width is d_ff = 4 * d_model (3072 for d_model 768), not 3 * d_model"),
    Wrong(lambda c: _count(c) - c["num_layers"] * (c["d_model"] ** 2 + c["d_model"]),
          "W_o is missing: attention has four projections, W_q, W_k, W_v and the output projection W_o, "
          "each (d_model, d_model) with a bias"),
    Wrong(lambda c: _count(c) + (c["num_heads"] - 1) * _counts(c)["attention"],
          "the heads share W_q, W_k, W_v, W_o (each head owns d_model / h of their columns): do not multiply by "
          "num_heads"),
    Wrong(lambda c: _count(c, num_layers=1),
          "you counted one block: there are num_layers of them, each with its own parameters"),
]


@shows_verdict
def check_gpt2_parameter_count(fn):
    """Grade ``fn(config) -> int``: GPT-2's parameter count, checked on GPT-2 small, medium and a tiny model."""
    verdict = grade_function(fn, lambda c: parameter_count(c)["total"], _count_cases(),
                             what="my_gpt2_parameter_count", wrongs=_COUNT_WRONGS, rtol=0.0, atol=0.5,
                             shape_hint="return one number, the total")
    if verdict.passed:
        total = parameter_count(GPT2_FAMILY["small"])["total"]
        return Verdict(True, f"GPT-2 small has {total:,} parameters, and your function counts any size of GPT-2.")
    return verdict



# Predict, then run (section 9, optional): the mean of 100,000 ones after inverted dropout with p = 0.5
#: The question: how many ones, and the dropout probability.
DROPOUT_ONES, DROPOUT_P = 100_000, 0.5


def dropout_mean(count=DROPOUT_ONES, p=DROPOUT_P):
    """The mean of ``count`` ones after the package's inverted dropout (the notebook's draw, seeded the same way)."""
    from ..config import SEED
    from ..multihead import dropout_mask

    return float((np.ones(count) * dropout_mask((count,), p, np.random.default_rng(SEED), np.float64)).mean())


@shows_verdict
def check_dropout_mean(prediction):
    """Grade a prediction: the mean of 100,000 ones after inverted dropout with p = 0.5, zeros included."""
    from ._grader import grade_value

    p, kept = DROPOUT_P, 1 / (1 - DROPOUT_P)
    return grade_value(prediction, dropout_mean(), name="your prediction", rtol=0.0, atol=0.01, wrongs=[
        (1 - p, f"that is the share of ones that survive; each survivor is also divided by 1 - p, so it becomes "
                f"{kept:g}: the mean counts both"),
        (kept, f"{kept:g} is what each survivor becomes; but a share p = {p:g} of the numbers are now 0, and the mean "
               "counts them too"),
        (0.0, "dropout zeroes a share p of the numbers, not all of them"),
        ((1 - p) ** 2, "the survivors are divided by 1 - p, not multiplied by it: the division makes up for the zeros"),
    ], hint=f"a share p = {p:g} of the ones become 0, the rest become 1 / (1 - p) = {kept:g}: average the two",
        success=f"about 1: a share {p:g} became 0 and the rest {kept:g}, so the mean, the expected value of each "
                "number, stays 1. That is what the division by 1 - p is for: nothing needs rescaling at inference.")


__all__ += ["check_dropout_mean"]
