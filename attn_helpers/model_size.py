"""How many parameters a transformer has, computed from its configuration (notebook 10, section 7).

Counting needs no arrays: each weight matrix of a block is ``(d_in, d_out)``, so its size follows
from ``d_model`` and ``d_ff``; the embeddings from ``vocab_size`` and ``context_length``.
"""

from __future__ import annotations

from collections.abc import Mapping

from ._validate import as_flag, as_positive_int

__all__ = ["block_parameter_count", "parameter_count", "CONFIG_KEYS"]


def block_parameter_count(d_model, d_ff=None, bias=True):
    """How many parameters one block has, by part: ``attention``, ``feed_forward``, ``layer_norms``, ``total``.

    ``d_ff`` defaults to ``4 * d_model``; ``bias``: the six projections have biases (GPT-2, BERT).
    The number of heads does not appear: splitting ``d_model`` into heads adds no parameters.

    >>> block_parameter_count(768)  # one GPT-2 small block
    {'attention': 2362368, 'feed_forward': 4722432, 'layer_norms': 3072, 'total': 7087872}
    """
    d_model = as_positive_int(d_model, "d_model")
    d_ff = 4 * d_model if d_ff is None else as_positive_int(d_ff, "d_ff")
    bias = as_flag(bias, "bias")
    attention = 4 * d_model * d_model + (4 * d_model if bias else 0)  # W_q, W_k, W_v, W_o (d_model, d_model)
    feed_forward_ = d_model * d_ff + d_ff * d_model + ((d_ff + d_model) if bias else 0)  # W_1, W_2 (+ b_1, b_2)
    layer_norms = 2 * (d_model + d_model)  # two layer norms, each a gamma and a beta of d_model
    return {"attention": attention, "feed_forward": feed_forward_, "layer_norms": layer_norms,
            "total": attention + feed_forward_ + layer_norms}


#: The keys :func:`parameter_count` understands, with their defaults (``None`` = required).
CONFIG_KEYS = {"num_layers": None, "d_model": None, "num_heads": None, "vocab_size": None, "context_length": None,
               "d_ff": None,  # default 4 * d_model
               "bias": True, "tied_embeddings": True, "learned_positions": True, "token_types": 0,
               "embedding_norm": False, "final_norm": True}
_REQUIRED = ("num_layers", "d_model", "num_heads", "vocab_size", "context_length")


def parameter_count(config):
    """How many parameters a transformer has, computed from its configuration, by part.

    ``config``: ``num_layers``, ``d_model``, ``num_heads``, ``vocab_size``, ``context_length`` (required), and
    optionally ``d_ff`` (default ``4 * d_model``), ``bias`` (True), ``tied_embeddings`` (True: the output layer reuses
    the token embeddings), ``learned_positions`` (True: a position table; False: sinusoidal, no parameters),
    ``token_types`` (0; BERT: 2), ``embedding_norm`` (False; BERT: True), ``final_norm`` (True: a pre-norm model's last
    layer norm; BERT: False). Returns ``counts``: ``token_embeddings``, ``position_embeddings``,
    ``token_type_embeddings``, ``embedding_norm``, ``attention``, ``feed_forward``, ``layer_norms`` (all blocks),
    ``final_norm``, ``output_head`` and ``total`` (the sum of the others).

    >>> from attn_helpers.examples import GPT2_SMALL
    >>> counts = parameter_count(GPT2_SMALL)
    >>> counts["total"]
    124439808
    >>> counts["token_embeddings"], counts["attention"], counts["feed_forward"]
    (38597376, 28348416, 56669184)
    """
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a mapping (a dict) with the keys {list(CONFIG_KEYS)}; "
                        f"got {type(config).__name__}")
    unknown = sorted(set(config) - set(CONFIG_KEYS))
    missing = [key for key in _REQUIRED if key not in config]
    if unknown or missing:
        raise ValueError(f"config: unknown keys {unknown}, missing keys {missing}; the keys are {list(CONFIG_KEYS)}")
    c = {**CONFIG_KEYS, **config}
    num_layers, d_model, num_heads, vocab_size, context_length = (as_positive_int(c[key], key) for key in _REQUIRED)
    token_types = as_positive_int(c["token_types"], "token_types", allow_zero=True)
    if d_model % num_heads:
        raise ValueError(f"config: d_model={d_model} must be divisible by num_heads={num_heads}")
    for key in ("tied_embeddings", "learned_positions", "embedding_norm", "final_norm"):
        as_flag(c[key], f"config[{key!r}]")
    block = block_parameter_count(d_model, c["d_ff"], c["bias"])
    counts = {
        "token_embeddings": vocab_size * d_model,  # one row of d_model per token of the vocabulary
        "position_embeddings": context_length * d_model if c["learned_positions"] else 0,
        "token_type_embeddings": token_types * d_model,
        "embedding_norm": 2 * d_model if c["embedding_norm"] else 0,
        "attention": num_layers * block["attention"],
        "feed_forward": num_layers * block["feed_forward"],
        "layer_norms": num_layers * block["layer_norms"],
        "final_norm": 2 * d_model if c["final_norm"] else 0,
        "output_head": 0 if c["tied_embeddings"] else d_model * vocab_size,  # tied: reuses the token embeddings
    }
    counts["total"] = sum(counts.values())
    return counts
