r"""Sliding windows and attention sinks (notebook 17): a banded causal mask, the rolling-buffer KV cache that keeps
only the window, a per-head sink logit (gpt-oss), and SmolLM2 run with any mask, or with its sinks moved to just
before the window, as StreamingLLM numbers its cache.

A **sliding window** of ``window`` tokens lets query ``i`` see keys ``i - window + 1 .. i``; ``sinks`` first tokens
stay visible whatever the distance (StreamingLLM, Xiao et al. 2023):

.. math:: \mathrm{mask}_{ij} = (j \le i) \wedge \big(i - j < w \;\vee\; j < s\big)

>>> band_mask(5, window=2, sinks=1).astype(int)
array([[1, 0, 0, 0, 0],
       [1, 1, 0, 0, 0],
       [1, 1, 1, 0, 0],
       [1, 0, 1, 1, 0],
       [1, 0, 0, 1, 1]])
"""

from __future__ import annotations

import math

import numpy as np

from ._validate import as_float_array, as_positive_int, as_positive_number, as_token_ids, check_mask, checked
from .block import transformer_block
from .config import one_core
from .core import scaled_dot_product_attention, softmax
from .llama import rms_norm
from .llm_measures import next_token_losses
from .multihead import attend_heads, attention_heads, project_heads, repeat_kv_heads

__all__ = ["band_mask", "rolling_attention", "attention_with_sink", "masked_logits", "masked_losses",
           "sink_positions", "moved_sink_attention", "streaming_study", "STREAMING_SETTINGS", "window_cache_bytes",
           "validation_ids", "load_streaming_runs",
           "WINDOW_GRID", "window_grid_losses",
           "STREAMING_FILE", "STREAMING_FULL"]


def band_mask(T, window, sinks=0):
    """Boolean ``(T, T)``: query ``i`` may see key ``j`` if ``j <= i`` and (``i - j < window`` or ``j < sinks``).

    ``window >= T`` is the ordinary causal mask (notebook 07); ``sinks`` first tokens stay visible to every query.
    """
    T = as_positive_int(T, "T")
    window = as_positive_int(window, "window")
    sinks = as_positive_int(sinks, "sinks", allow_zero=True)
    i, j = np.arange(T)[:, None], np.arange(T)[None, :]  # (T, 1) queries, (1, T) keys
    return (j <= i) & ((i - j < window) | (j < sinks))  # (T, T)


def _rolling_inputs(queries, keys, values, window, sinks=0):
    queries, keys, values = (as_float_array(a, name, min_ndim=2) for name, a in
                             (("queries", queries), ("keys", keys), ("values", values)))
    if queries.shape[:-1] != keys.shape[:-1] or keys.shape[:-1] != values.shape[:-1] \
            or queries.shape[-1] != keys.shape[-1]:
        raise ValueError(f"queries {queries.shape}, keys {keys.shape}, values {values.shape}: expected (..., T, d_k), "
                         "(..., T, d_k), (..., T, d_v), one row per token for all three")
    return (queries, keys, values, as_positive_int(window, "window"),
            as_positive_int(sinks, "sinks", allow_zero=True))


@checked(_rolling_inputs)
def rolling_attention(queries, keys, values, window, sinks=0):
    r"""Causal attention token by token with a **rolling buffer**: ``window`` slots, token ``t`` written into slot
    ``(t - sinks) % window`` over the oldest one, plus the ``sinks`` first tokens kept apart.

    The cache never holds more than ``sinks + window`` keys, and the result equals attention with
    :func:`band_mask` (``queries``, ``keys`` ``(..., T, d_k)``, ``values`` ``(..., T, d_v)`` -> ``(..., T, d_v)``).

    >>> x = np.random.default_rng(0).standard_normal((6, 4))
    >>> banded = scaled_dot_product_attention(x, x, x, band_mask(6, 3, 1))[0]
    >>> bool(np.allclose(rolling_attention(x, x, x, window=3, sinks=1), banded))
    True
    """
    T = queries.shape[-2]
    slot_keys = np.zeros((*keys.shape[:-2], sinks + window, keys.shape[-1]), keys.dtype)  # (..., s + w, d_k)
    slot_values = np.zeros((*values.shape[:-2], sinks + window, values.shape[-1]), values.dtype)
    filled = np.zeros(sinks + window, dtype=bool)  # which slots hold a key yet
    out = np.zeros((*queries.shape[:-1], values.shape[-1]), np.result_type(queries, values))
    for t in range(T):
        slot = t if t < sinks else sinks + (t - sinks) % window  # a sink keeps its slot; the others roll
        slot_keys[..., slot, :], slot_values[..., slot, :], filled[slot] = keys[..., t, :], values[..., t, :], True
        query = queries[..., t:t + 1, :]  # (..., 1, d_k): the newest token only
        out[..., t, :] = scaled_dot_product_attention(query, slot_keys, slot_values, filled)[0][..., 0, :]
    return out


def _sink_inputs(queries, keys, values, sink_logit, mask=None):
    queries, keys, values = (as_float_array(a, name, min_ndim=2) for name, a in
                             (("queries", queries), ("keys", keys), ("values", values)))
    if queries.shape[-1] != keys.shape[-1] or keys.shape[-2] != values.shape[-2]:
        raise ValueError(f"queries {queries.shape}, keys {keys.shape}, values {values.shape}: expected (..., T_q, d_k),"
                         " (..., T_k, d_k), (..., T_k, d_v)")
    sink_logit = as_float_array(sink_logit, "sink_logit", min_ndim=0)
    try:
        np.broadcast_shapes(sink_logit.shape + (1, 1), queries.shape[:-1] + (1,))
    except ValueError:
        raise ValueError(f"sink_logit of shape {sink_logit.shape} does not fit queries {queries.shape}: one logit per "
                         "head, shape (h,) for queries (h, T, d_k), or one number") from None
    return queries, keys, values, sink_logit, check_mask(mask, queries.shape[-2], keys.shape[-2])


@checked(_sink_inputs)
def attention_with_sink(queries, keys, values, sink_logit, mask=None):
    r"""Attention whose softmax has one more logit per head, the **sink**, whose weight is thrown away (gpt-oss).

    .. math:: w_{ij} = \frac{e^{s_{ij}}}{e^{b} + \sum_k e^{s_{ik}}}, \qquad \sum_j w_{ij} = 1 - w_{\mathrm{sink}} < 1

    ``sink_logit`` ``b``: a number, or one per head ``(h,)`` for heads ``(h, T, d_k)``. Returns ``(context, weights)``
    as :func:`~attn_helpers.core.scaled_dot_product_attention` does; a row's weights sum to less than 1.

    >>> context, weights = attention_with_sink(np.zeros((1, 2)), np.zeros((3, 2)), np.ones((3, 2)), sink_logit=0.0)
    >>> weights, context            # 3 equal scores and a sink of the same logit: 1/4 each, 1/4 thrown away
    (array([[0.25, 0.25, 0.25]]), array([[0.75, 0.75]]))
    """
    scores = queries @ np.swapaxes(keys, -1, -2) / math.sqrt(queries.shape[-1])  # (..., T_q, T_k)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)  # True = may attend
    sink = np.broadcast_to(sink_logit[..., None, None], (*scores.shape[:-1], 1))  # (..., T_q, 1): one column more
    weights = softmax(np.concatenate([scores, sink], axis=-1))[..., :-1]  # (..., T_q, T_k + 1) -> drop the sink
    return weights @ values, weights  # (..., T_q, T_k) @ (..., T_k, d_v) -> (..., T_q, d_v)


def _model_inputs(model, ids, mask, attention=None):
    from .llm import SmolLM2

    if not isinstance(model, SmolLM2):
        raise TypeError(f"model must be load_smollm2()'s SmolLM2; got {type(model).__name__}")
    ids = as_token_ids(ids, model.vocab_size, "ids", (1, 2))
    T = ids.shape[-1]
    mask = check_mask(mask, T, T, "(..., T, T)")
    if mask is None or mask.ndim > ids.ndim + 1:
        raise ValueError(f"mask must have shape (T, T) or, for ids (B, T), (B, T, T); got "
                         f"{None if mask is None else mask.shape} for ids {ids.shape}")
    if attention is not None and not callable(attention):
        raise TypeError(f"attention must be a function of a block (block -> its attention) or None; got "
                        f"{type(attention).__name__}")
    return model, ids, mask, attention


@checked(_model_inputs)
@one_core()
def masked_logits(model, ids, mask, attention=None):
    """SmolLM2's logits ``(..., T, vocab)`` when every layer attends with ``mask`` instead of the causal mask.

    ``ids (T,)`` with ``mask (T, T)``, or a batch ``ids (B, T)`` with one mask per sequence ``(B, T, T)``: the
    weights are read once for all of them. ``mask=np.tri(T, dtype=bool)`` gives ``model.logits(ids)``.
    ``attention``: a function ``attention(block)`` that returns the attention to run in that block instead of its
    own (latent attention, top-k attention, ...), as :func:`~attn_helpers.block.transformer_block` takes it.
    """
    x = model.embeddings[ids]  # (..., T, d_model)
    for block in model.blocks:
        own = None if attention is None else attention(block)
        x, _ = transformer_block(x, block, mask, True, own)  # notebook 10's block, with this mask in its attention
    final = rms_norm(x, model.final_norm_gamma, model.blocks[0].eps)  # (..., T, d_model)
    return final @ model.embeddings.T  # (..., T, d_model) @ (d_model, vocab) -> (..., T, vocab): tied output


def masked_losses(model, ids, masks, attention=None):
    """Next-token losses ``(len(masks), T - 1)`` in nats of ``ids (T,)`` under each mask of ``masks`` (a dict or a
    list of ``(T, T)`` masks), all in one batched pass; ``attention``: as :func:`masked_logits` takes it."""
    masks = list(masks.values()) if isinstance(masks, dict) else list(masks)
    ids = np.asarray(ids)
    logits = masked_logits(model, np.tile(ids, (len(masks), 1)), np.stack(masks), attention)  # (runs, T, vocab)
    return np.stack([next_token_losses(run, ids) for run in logits])  # (runs, T - 1)


def sink_positions(T, window, sinks):
    """Where each query of ``T`` sees the ``sinks`` when a cache is numbered as StreamingLLM numbers it: ``(T, s)``.

    Query ``t``'s cache holds the sinks at positions ``0 .. s - 1`` and its window right after them, so once the
    window is full the query sits at ``s + w - 1``. RoPE sees only distances, so the same scores come from
    leaving the window's keys at their positions in the text and moving sink ``i`` to ``i + max(0, t - s - w + 1)``:
    just before the window.

    >>> sink_positions(6, window=3, sinks=1)[:, 0]   # from query 3 on, the sink sits just before the window
    array([0, 0, 0, 0, 1, 2])
    """
    T, window = as_positive_int(T, "T"), as_positive_int(window, "window")
    sinks = as_positive_int(sinks, "sinks", allow_zero=True)
    shift = np.maximum(0, np.arange(T) - sinks - window + 1)  # (T,): how far each query's window has moved on
    return shift[:, None] + np.arange(sinks)  # (T, 1) + (s,) -> (T, s)


def moved_sink_attention(block, window, sinks=1):
    r"""The attention of a RoPE ``block`` (SmolLM2's) whose ``sinks`` first keys are turned, for each query, to the
    position just before its window (:func:`sink_positions`): StreamingLLM's cache, where the sinks get positions
    ``0 .. s - 1`` and the window follows them. Pass it to :func:`masked_logits` as ``attention=`` with
    ``band_mask(T, window, sinks)``: the mask says which keys a query reads, this function where the sinks sit.

    A sink's score now depends on the query, so no single key matrix holds it: its key is turned anew for every
    query, and its score joins the window's scores as one more column of the same softmax,

    .. math:: s_{t,i} = q_t \cdot R_{p_i(t)}\, k_i \,/\, \sqrt{d_h}, \qquad p_i(t) = i + \max(0,\ t - s - w + 1).

    >>> import dataclasses
    >>> from attn_helpers.kv_cache import init_grouped_query_params
    >>> from attn_helpers.llm import LlamaBlockParams
    >>> p = init_grouped_query_params(d_model=8, num_heads=4, num_kv_heads=2, dtype=np.float64)
    >>> block = LlamaBlockParams(**{f.name: getattr(p, f.name) for f in dataclasses.fields(p)}, W_up=p.W_1)
    >>> x, mask = np.random.default_rng(0).standard_normal((6, 8)), band_mask(6, window=2, sinks=1)
    >>> moved = moved_sink_attention(block, window=2, sinks=1)(x, mask)[0]
    >>> in_place = block.attention(x, mask)[0]     # the sink at its own position, 0
    >>> [bool(np.allclose(moved[t], in_place[t])) for t in range(6)]   # from query 3 on, the sink sits at t - 2
    [True, True, True, False, False, False]
    """
    window = as_positive_int(window, "window")
    sinks = as_positive_int(sinks, "sinks", allow_zero=True)
    if getattr(block, "rotate", None) is None or not hasattr(block, "num_kv_heads"):
        raise TypeError(f"block must be a RoPE block with num_kv_heads (SmolLM2's LlamaBlockParams); got "
                        f"{type(block).__name__}: a sink is moved by turning its key, so the block must turn keys")
    h, h_kv = block.num_heads, block.num_kv_heads

    def attention(x, mask=None, record=None, dropout=0.0, rng=None):
        T = x.shape[-2]
        s = min(sinks, T)
        read = band_mask(T, window, s) if mask is None else mask  # (..., T, T): which keys each query reads
        # 1-2. Notebook 08's heads, each query and key turned by its position in the text
        queries, keys, values = attention_heads(x, block.W_q, block.W_k, block.W_v, h, block.biases, None,
                                                block.rotate)  # (..., h, T, d_h) each
        # The sinks' keys, not yet turned, then turned once per query: to just before that query's window
        sink_keys = repeat_kv_heads(project_heads(x[..., :s, :], block.W_k, block.b_k, h_kv), h)  # (..., h, s, d_h)
        sink_keys = block.rotate(sink_keys[..., None, :, :], sink_positions(T, window, s))  # (..., h, T, s, d_h)
        sink_scores = (queries[..., None, :] @ np.swapaxes(sink_keys, -1, -2))[..., 0, :] / math.sqrt(
            queries.shape[-1])  # (..., h, T, 1, d_h) @ (..., h, T, d_h, s) -> (..., h, T, s)
        # 3-4. One softmax over the window's keys and s more columns: the sinks, whose scores are given as a bias
        # on a zero key (the sinks' own columns among the window's keys are masked, so each is counted once)
        keys = np.concatenate([keys, np.zeros_like(keys[..., :s, :])], axis=-2)  # (..., h, T + s, d_h)
        values = np.concatenate([values, values[..., :s, :]], axis=-2)  # (..., h, T + s, d_h): values never turn
        bias = np.concatenate([np.zeros((*sink_scores.shape[:-1], T), sink_scores.dtype), sink_scores],
                              axis=-1)  # (..., h, T, T + s): 0 on the window's keys, the sinks' scores after them
        window_keys = read & (np.arange(T) >= s)  # (..., T, T): the window's keys, the sinks apart
        keep = np.concatenate([window_keys, read[..., :s]], axis=-1)  # (..., T, T + s)
        return attend_heads(queries, keys, values, block.W_o, block.b_o, keep, bias=bias)
    return attention


#: The runs of the StreamingLLM experiment: name -> (sinks, moved); ``None``: full causal attention. ``moved``:
#: the sinks sit just before the window (:func:`moved_sink_attention`), as StreamingLLM numbers its cache.
STREAMING_SETTINGS = {"full attention": None, "window": (0, False), "window + 1 sink": (1, False),
                      "window + 4 sinks": (4, False), "window + 1 sink, moved": (1, True)}


def streaming_study(model, ids, window):
    """StreamingLLM's experiment on SmolLM2: losses ``(5, T - 1)`` of ``ids`` with full attention, a ``window``,
    the window plus the first token, plus the first four, and plus the first token moved to just before the window
    (:data:`STREAMING_SETTINGS`); returns ``{"names", "losses", "window"}``. Two passes: the masks, then the move."""
    T = len(ids)
    masks = {name: np.tri(T, dtype=bool) if s is None else band_mask(T, window, s[0])
             for name, s in STREAMING_SETTINGS.items()}
    moved = {name: s[0] for name, s in STREAMING_SETTINGS.items() if s is not None and s[1]}  # name -> sinks
    kept = [name for name in masks if name not in moved]
    losses = dict(zip(kept, masked_losses(model, ids, [masks[name] for name in kept])))  # one batched pass
    for name, sinks in moved.items():  # one pass more: the sinks' keys turned anew for every query
        losses[name] = masked_losses(model, ids, [masks[name]],
                                     lambda block, s=sinks: moved_sink_attention(block, window, s))[0]
    return {"names": list(STREAMING_SETTINGS), "losses": np.stack([losses[n] for n in STREAMING_SETTINGS]),
            "window": window}


def window_cache_bytes(num_layers, num_kv_heads, head_dim, T, window=None, global_every=None, bytes_per_number=2):
    """Bytes of a KV cache at ``T`` tokens when the layers keep only a ``window`` of keys and values (a rolling
    buffer), except one layer in ``global_every`` that keeps all ``T`` (Gemma 3: 1 in 6; gpt-oss: 1 in 2).

    >>> window_cache_bytes(32, 8, 128, T=32768, window=4096) / 2**30   # Mistral 7B at 32k tokens, float16
    0.5
    """
    num_layers, num_kv_heads, head_dim = (as_positive_int(n, name) for name, n in (
        ("num_layers", num_layers), ("num_kv_heads", num_kv_heads), ("head_dim", head_dim)))
    T = as_positive_int(T, "T", allow_zero=True)
    bytes_per_number = as_positive_number(bytes_per_number, "bytes_per_number", " (0.5 for a 4-bit cache)")
    bytes_per_number = int(bytes_per_number) if bytes_per_number.is_integer() else bytes_per_number  # whole bytes
    per_token = 2 * num_kv_heads * head_dim * bytes_per_number  # keys and values of one layer, one token
    if window is None:
        return num_layers * T * per_token
    window = as_positive_int(window, "window")
    full_layers = 0 if global_every is None else num_layers // as_positive_int(global_every, "global_every")
    return (full_layers * T + (num_layers - full_layers) * min(T, window)) * per_token


#: The full-size StreamingLLM run, shipped (``tools/build_streaming_runs.py`` rebuilds it).
STREAMING_FILE = "nb17_streaming_runs.npz"
#: Its size: the first 1,024 tokens of notebook 14's validation text, a window of 128 tokens; the loss is
#: averaged from position 256 on (every query there has lost the first token from its window).
STREAMING_FULL = {"T": 1024, "window": 128, "from_position": 256}


#: The explorer's grid, shipped with the full-size run: every window and number of sinks over the first 256 tokens.
WINDOW_GRID = {"T": 256, "windows": tuple(range(8, 129, 8)), "sinks": (0, 1, 2, 3, 4)}


def window_grid_losses(model, batch=4):
    """Losses ``(len(windows), len(sinks), T - 1)`` of SmolLM2 over :data:`WINDOW_GRID`'s text for every window and
    number of sinks, and full attention's ``(T - 1,)``: ``(grid, full)``, ``batch`` masks per pass."""
    T, windows, sinks = WINDOW_GRID["T"], WINDOW_GRID["windows"], WINDOW_GRID["sinks"]
    ids = validation_ids(model, T)
    settings = [(w, s) for w in windows for s in sinks]
    losses = []
    for start in range(0, len(settings), batch):
        losses.extend(masked_losses(model, ids, [band_mask(T, w, s) for w, s in settings[start:start + batch]]))
    full = masked_losses(model, ids, [np.tri(T, dtype=bool)])[0]
    return np.array(losses).reshape(len(windows), len(sinks), T - 1), full


def validation_ids(model, T):
    """The first ``T`` token ids of notebook 14's *Pride and Prejudice* validation text, SmolLM2's tokenizer."""
    from .gpt import corpus_split

    T = as_positive_int(T, "T")
    return np.array(model.encode(corpus_split("val")[:12 * T])[:T])  # (T,): 12 characters a token is plenty


def load_streaming_runs() -> dict:
    """The shipped full-size run: ``names``, ``losses (5, T - 1)`` (nats, per position), ``window``, ``T``,
    ``from_position``; and the explorer's grid (:data:`WINDOW_GRID`): ``grid_losses (windows, sinks, 255)``,
    ``grid_full (255,)``, ``grid_windows``, ``grid_sinks``.

    >>> runs = load_streaming_runs()
    >>> runs["losses"].shape, int(runs["window"])
    ((5, 1023), 128)
    """
    from importlib import resources

    with (resources.files("attn_helpers") / "data" / STREAMING_FILE).open("rb") as handle, np.load(handle) as data:
        return {key: data[key] for key in data.files}
