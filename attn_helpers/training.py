"""A tiny attention model trained in numpy: tasks with known patterns, Adam written out, seeded training.

The model of notebook 11, in the series' notation (row vectors, one token per row)::

    X = token_embedding[tokens] + position_embedding        (B, T, d_model)
    for each layer:                                         one residual attention layer
        X = X + multi_head_attention(X, W_q, W_k, W_v, W_o, h, mask)[0]     (notebook 08's)
    logits = X @ W_out                                      (B, T, vocab_size)

trained with cross-entropy on synthetic sequences (:data:`TASKS`) whose right attention
pattern is known in advance. :func:`forward` keeps what :func:`backward` needs; the
backward pass chains the functions of :mod:`attn_helpers.backprop`. :func:`train` is
seeded and runs single-threaded (:func:`~attn_helpers.config.one_core`, scoped): the same seed gives the same
numbers, bit for bit, on the same machine with the same numpy. Another CPU (AVX-512 rather
than AVX2, or ARM) may round the last bits differently, and training amplifies such
differences over hundreds of steps: there the same seed gives the same outcome (the loss
falls below the same thresholds, the same accuracy and attention patterns, within the
tolerances the tests hold), not the same last digits.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ._validate import as_number, as_positive_int, as_token_ids
from .backprop import (
    attention_layer_backward,
    attention_layer_forward,
    cross_entropy,
    cross_entropy_backward,
    embedding_backward,
    linear_backward,
)
from .config import SEED, one_core
from .core import causal_mask
from .positions import alibi_bias, learned_positions, positional_encoding, rope

__all__ = ["Task", "TASKS", "ModelConfig", "POSITION_KINDS", "init_params", "forward", "backward", "adam_step",
           "sgd_step", "train", "TrainingRun", "accuracy", "held_out_batch", "token_labels", "SHIPPED_RUNS",
           "HISTORY_ONLY", "shipped_run", "load_runs"]

# ---------------------------------------------------------------------------------------------- tasks

def _copy_previous(rng, batch_size, seq_len, vocab_size):
    tokens = rng.integers(vocab_size, size=(batch_size, seq_len))
    targets = np.full_like(tokens, -1)  # position 0 has no previous token: not scored
    targets[:, 1:] = tokens[:, :-1]  # the answer at position t is the token at t - 1
    return tokens, targets


def _reverse(rng, batch_size, seq_len, vocab_size):
    tokens = rng.integers(vocab_size, size=(batch_size, seq_len))
    return tokens, tokens[:, ::-1].copy()  # the answer at position t is the token at T - 1 - t


def _induction(rng, batch_size, seq_len, vocab_size):
    """``noise, segment, segment``: in the repeat, each token predicts the one that followed it before.

    The segment has ``n`` distinct tokens, ``n`` drawn from 3 .. T // 2 for each sequence, so the
    distance to the earlier copy varies and position alone cannot find it; the noise in front uses
    only tokens outside the segment.
    """
    if seq_len < 6 or vocab_size <= seq_len // 2:
        raise ValueError(f"the induction task needs seq_len >= 6 (a segment of at least 3 tokens and its repeat) "
                         f"and vocab_size > seq_len // 2 (noise outside the segment); got seq_len={seq_len}, "
                         f"vocab_size={vocab_size}")
    n = rng.integers(3, seq_len // 2 + 1, size=(batch_size, 1))  # (B, 1): the segment length of each sequence
    order = rng.permuted(np.tile(np.arange(vocab_size), (batch_size, 1)), axis=1)  # (B, V): a shuffle per row
    noise = n + (rng.random((batch_size, seq_len)) * (vocab_size - n)).astype(np.int64)  # indices after the segment
    position = np.arange(seq_len)  # (T,)
    first, repeat = seq_len - 2 * n, seq_len - n  # (B, 1): where the segment and its repeat start
    index = np.where(position >= repeat, position - repeat, np.where(position >= first, position - first, noise))
    tokens = np.take_along_axis(order, index, axis=1)  # (B, T)
    targets = np.full_like(tokens, -1)
    scored = (position >= repeat) & (position < seq_len - 1)  # (B, T): inside the repeat, before the last token
    targets[:, :-1] = np.where(scored[:, :-1], tokens[:, 1:], -1)  # "... A B ... A" -> B
    return tokens, targets


def _expected_copy_previous(seq_len):
    return np.eye(seq_len, k=-1)  # query t attends to key t - 1: the diagonal just below the main one


def _expected_reverse(seq_len):
    return np.eye(seq_len)[::-1]  # query t attends to key T - 1 - t: the anti-diagonal


@dataclass(frozen=True)
class Task:
    """A synthetic task: how to draw a batch, whether attention is causal, and its default model.

    ``make_batch(rng, batch_size, seq_len, vocab_size) -> (tokens, targets)``, both integer arrays of
    shape ``(batch_size, seq_len)``; a target of ``-1`` is not scored. ``expected_pattern(seq_len)``
    is the ``(T, T)`` attention pattern that solves the task (None when it depends on the content).
    """

    name: str
    description: str
    make_batch: Callable
    causal: bool
    seq_len: int
    vocab_size: int
    expected_pattern: Callable | None = None
    steps: int = 600
    num_layers: int = 1
    num_heads: int = 1
    d_model: int = 32
    learning_rate: float = 0.01

    def batch(self, rng, batch_size=64):
        """One batch ``(tokens, targets)`` of shape ``(batch_size, seq_len)`` each."""
        return self.make_batch(rng, batch_size, self.seq_len, self.vocab_size)

    def mask(self):
        """The ``(T, T)`` attention mask (True = may attend), or None when every token sees every other."""
        return causal_mask(self.seq_len) if self.causal else None


def _as_task(task) -> Task:
    """``task`` itself if it is a :class:`Task`, else the task of :data:`TASKS` with that name."""
    if isinstance(task, Task):
        return task
    if not isinstance(task, str):
        raise TypeError(f"task must be a task name or a Task; got {type(task).__name__} {task!r}")
    if task not in TASKS:
        raise ValueError(f"task must be one of {sorted(TASKS)} or a Task; got {task!r}")
    return TASKS[task]


def token_labels(task, tokens):
    """Printable names of token ids: digits for a vocabulary of at most 10, else letters A, B, ... (at most 26).

    >>> token_labels("induction", [0, 1, 15])
    ['A', 'B', 'P']
    """
    task = _as_task(task)
    if task.vocab_size > 26:
        raise ValueError(f"token_labels names at most 26 tokens (A to Z); task {task.name!r} has vocab_size="
                         f"{task.vocab_size}: print the ids themselves")
    alphabet = "0123456789" if task.vocab_size <= 10 else "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return [alphabet[t] for t in as_token_ids(tokens, task.vocab_size, "tokens", allow_empty=True).reshape(-1)]


#: The tasks of notebook 11, by name.
TASKS = {
    "copy previous": Task("copy previous", "output the token one position back", _copy_previous, causal=True,
                          seq_len=8, vocab_size=10, expected_pattern=_expected_copy_previous, steps=100),
    "reverse": Task("reverse", "output the sequence backwards", _reverse, causal=False, seq_len=8, vocab_size=10,
                    expected_pattern=_expected_reverse, steps=150),
    "induction": Task("induction", "... A B ... A -> B: continue a repeated segment", _induction, causal=True,
                      seq_len=12, vocab_size=16, steps=600, num_layers=2, d_model=16),
}

# ---------------------------------------------------------------------------------------------- the model

#: How the model may know where a token stands (notebook 09): ``ModelConfig.positions``.
POSITION_KINDS = ("none", "learned", "sinusoidal", "rope", "alibi")


@dataclass(frozen=True)
class ModelConfig:
    """The shape of the model and the switches of the ablations.

    ``seq_len`` is the number of rows of the learned position table (the longest input it can read);
    ``positions`` is one of :data:`POSITION_KINDS`: ``"learned"`` (that table, added to the embeddings),
    ``"sinusoidal"`` (:func:`~attn_helpers.positions.positional_encoding`, added), ``"rope"``
    (:func:`~attn_helpers.positions.rope` on queries and keys), ``"alibi"``
    (:func:`~attn_helpers.positions.alibi_bias` on the scores) or ``"none"``. ``use_positions=False``
    means ``"none"`` whatever ``positions`` says.
    """

    vocab_size: int
    seq_len: int
    d_model: int = 32
    num_layers: int = 1
    num_heads: int = 1
    use_positions: bool = True  # False: no position embedding (notebook 09's order-blind attention)
    scaled: bool = True  # False: scores not divided by sqrt(d_k) (notebook 06)
    positions: str = "learned"  # one of POSITION_KINDS

    def __post_init__(self):
        if self.positions not in POSITION_KINDS:
            raise ValueError(f"positions must be one of {POSITION_KINDS}; got {self.positions!r}")
        if self.position_kind == "rope" and self.num_heads > 0 and (self.d_model // self.num_heads) % 2:
            raise ValueError(f"positions='rope' rotates pairs of features: head_dim = d_model // num_heads = "
                             f"{self.d_model} // {self.num_heads} must be even")

    @property
    def position_kind(self):
        """The positions the model really uses: ``"none"`` when ``use_positions`` is False, else ``positions``."""
        return self.positions if self.use_positions else "none"

    @classmethod
    def for_task(cls, task: Task, **changes):
        """The task's default model, with ``changes`` (for example ``use_positions=False``)."""
        config = cls(task.vocab_size, task.seq_len, task.d_model, task.num_layers, task.num_heads)
        return replace(config, **changes)

    @property
    def head_dim(self):
        return self.d_model // self.num_heads


def init_params(config: ModelConfig, rng) -> dict:
    """Random initial parameters: embeddings ~ N(0, 1), projections ~ N(0, 1 / d_model).

    Returns a dict of float64 arrays: ``token_embedding`` (vocab_size, d_model), ``position_embedding``
    (seq_len, d_model; trained only with ``positions="learned"``, drawn for every kind so that a seed
    gives the same start whatever the positions), for each layer ``l`` the matrices ``"{l}.W_q"``,
    ``"{l}.W_k"``, ``"{l}.W_v"``, ``"{l}.W_o"`` (d_model, d_model), and ``W_out`` (d_model, vocab_size).

    >>> params = init_params(ModelConfig(vocab_size=10, seq_len=8), np.random.default_rng(0))
    >>> {name: p.shape for name, p in params.items()}["0.W_q"]
    (32, 32)
    """
    d = config.d_model
    if d % config.num_heads:
        raise ValueError(f"d_model={d} must be divisible by num_heads={config.num_heads}")
    params = {
        "token_embedding": rng.standard_normal((config.vocab_size, d)),
        "position_embedding": rng.standard_normal((config.seq_len, d)),
    }
    for layer in range(config.num_layers):
        for name in ("W_q", "W_k", "W_v", "W_o"):
            params[f"{layer}.{name}"] = rng.standard_normal((d, d)) / np.sqrt(d)
    params["W_out"] = rng.standard_normal((d, config.vocab_size)) / np.sqrt(d)
    return params


def forward(params: dict, tokens, config: ModelConfig, mask=None):
    """Logits of shape ``(B, T, vocab_size)`` and the cache the backward pass needs.

    Each layer is notebook 08's :func:`~attn_helpers.multihead.multi_head_attention`, its positions given by its
    hooks (``rotate`` for RoPE, ``bias`` for ALiBi); ``cache["layers"]`` holds what each layer recorded and
    ``cache["weights"]`` its attention weights, shape ``(B, h, T, T)`` each.
    """
    tokens = np.asarray(tokens)
    kind = config.position_kind
    x = params["token_embedding"][tokens]  # (B, T, d_model): one row per token
    if kind == "learned":  # a table row per position: T larger than the table raises
        x = x + learned_positions(params["position_embedding"], tokens.shape[1])  # (B, T, d_model) + (T, d_model)
    elif kind == "sinusoidal":
        x = x + positional_encoding(tokens.shape[1], config.d_model, dtype=np.float64)  # (B, T, d) + (T, d)
    hooks = {"scale": None if config.scaled else 1.0,  # None: the default 1 / sqrt(d_k)
             "rotate": rope if kind == "rope" else None,  # queries and keys turned by their positions
             "bias": alibi_bias(tokens.shape[1], config.num_heads) if kind == "alibi" else None}  # (h, T, T)
    cache = {"tokens": tokens, "layers": [], "weights": []}
    for layer in range(config.num_layers):
        W = [params[f"{layer}.{name}"] for name in ("W_q", "W_k", "W_v", "W_o")]
        cache["layers"].append({})
        attended, weights = attention_layer_forward(x, *W, config.num_heads, mask, record=cache["layers"][-1],
                                                    **hooks)
        cache["weights"].append(weights)
        x = x + attended  # residual: (B, T, d) + (B, T, d)
    cache["x_final"] = x
    logits = x @ params["W_out"]  # (B, T, d) @ (d, vocab_size) -> (B, T, vocab_size)
    return logits, cache


@dataclass(frozen=True)
class _Layer:
    """One layer's projections, as :func:`~attn_helpers.backprop.attention_layer_backward` reads them."""

    W_q: np.ndarray
    W_k: np.ndarray
    W_v: np.ndarray
    W_o: np.ndarray
    num_heads: int


def backward(params: dict, cache: dict, grad_logits, config: ModelConfig) -> dict:
    """Gradients of the loss with respect to every parameter, given ``grad_logits`` (B, T, vocab_size)."""
    grads = {}
    grad_x, grads["W_out"] = linear_backward(cache["x_final"], params["W_out"], grad_logits)
    for layer in reversed(range(config.num_layers)):
        W = {name: params[f"{layer}.{name}"] for name in ("W_q", "W_k", "W_v", "W_o")}
        # x_out = x + MultiHead(x): the residual passes grad_x straight through, and the branch adds its own
        grad_branch, layer_grads = attention_layer_backward(grad_x, cache["layers"][layer],
                                                            _Layer(**W, num_heads=config.num_heads))
        grads.update({f"{layer}.{name}": layer_grads[name] for name in W})
        grad_x = grad_x + grad_branch
    tokens = cache["tokens"]
    grads["token_embedding"] = embedding_backward(tokens, grad_x, params["token_embedding"].shape[0])
    grad_positions = np.zeros_like(params["position_embedding"])
    if config.position_kind == "learned":
        grad_positions[: tokens.shape[1]] = grad_x.sum(axis=0)  # every sequence of the batch adds the same rows
    grads["position_embedding"] = grad_positions
    return {name: grads[name] for name in params}


def loss_and_grads(params, tokens, targets, config, mask=None):
    """The mean cross-entropy of a batch, its gradients and the forward cache."""
    logits, cache = forward(params, tokens, config, mask)
    grads = backward(params, cache, cross_entropy_backward(logits, targets), config)
    return cross_entropy(logits, targets), grads, cache


def adam_step(params: dict, grads: dict, state: dict, learning_rate=0.01, beta1=0.9, beta2=0.98, eps=1e-8):
    r"""One step of Adam (Kingma & Ba, 2015), in place, written out.

    .. math:: m \leftarrow \beta_1 m + (1 - \beta_1) g, \quad v \leftarrow \beta_2 v + (1 - \beta_2) g^2, \quad
              \theta \leftarrow \theta - \eta\, \frac{m / (1 - \beta_1^t)}{\sqrt{v / (1 - \beta_2^t)} + \epsilon}

    ``state`` starts as ``{}`` and keeps the step count ``t`` and the moving averages ``m``, ``v``.

    >>> params, state = {"w": np.array([1.0])}, {}
    >>> adam_step(params, {"w": np.array([0.5])}, state, learning_rate=0.1)
    >>> params["w"]  # the first step moves every parameter by about the learning rate
    array([0.9])
    """
    state["t"] = t = state.get("t", 0) + 1
    m, v = state.setdefault("m", {}), state.setdefault("v", {})
    for name, g in grads.items():
        m[name] = beta1 * m.get(name, 0.0) + (1 - beta1) * g  # running mean of the gradient
        v[name] = beta2 * v.get(name, 0.0) + (1 - beta2) * g * g  # running mean of its square
        m_hat = m[name] / (1 - beta1**t)  # bias correction: both start at 0
        v_hat = v[name] / (1 - beta2**t)
        params[name] -= learning_rate * m_hat / (np.sqrt(v_hat) + eps)  # a step of about learning_rate per entry


def adamw_step(params: dict, grads: dict, state: dict, learning_rate=0.01, weight_decay=0.01, beta1=0.9,
               beta2=0.98, eps=1e-8):
    r"""One step of AdamW (Loshchilov & Hutter, 2019), in place: weight decay, then :func:`adam_step`.

    .. math:: \theta \leftarrow (1 - \eta \lambda)\, \theta, \quad \text{then Adam's step}

    Weight decay shrinks every parameter towards 0 by the same fraction ``learning_rate * weight_decay`` at
    each step, apart from the gradient (*decoupled*: an L2 penalty added to the gradient would be rescaled by
    Adam's ``1 / sqrt(v)`` like the rest, and shrink the weights with large gradients less).

    >>> params, state = {"w": np.array([1.0])}, {}
    >>> adamw_step(params, {"w": np.array([0.0])}, state, learning_rate=0.1, weight_decay=0.5)
    >>> params["w"]  # no gradient: only the decay, 1 - 0.1 * 0.5
    array([0.95])
    """
    for name in grads:
        params[name] *= 1 - learning_rate * weight_decay  # decoupled weight decay
    adam_step(params, grads, state, learning_rate, beta1, beta2, eps)


def sgd_step(params: dict, grads: dict, state: dict, learning_rate=0.5):
    r"""One step of plain gradient descent, in place: :math:`\theta \leftarrow \theta - \eta\, g`.

    Unlike Adam it does not rescale small gradients, so a vanishing gradient shows as a stall.

    >>> params = {"w": np.array([1.0])}
    >>> sgd_step(params, {"w": np.array([0.5])}, {}, learning_rate=0.1)
    >>> params["w"]
    array([0.95])
    """
    for name, g in grads.items():
        params[name] -= learning_rate * g


#: :func:`train` stops when the loss grows past this many times its first value (or stops being finite).
DIVERGED = 10

#: The optimizers :func:`train` offers, by name.
OPTIMIZERS = {"adam": adam_step, "sgd": sgd_step}

# ---------------------------------------------------------------------------------------------- training

@dataclass
class TrainingRun:
    """What :func:`train` returns: the trained parameters and the history of the run."""

    task: str  # the task's name
    config: ModelConfig
    params: dict
    steps: int
    seed: int
    losses: np.ndarray  # (steps,): the training loss of each step's batch
    snapshots: dict = field(default_factory=dict)  # step -> attention weights on the probe, (layers, h, T, T)
    probe: np.ndarray | None = None  # (T,): the held-out sequence whose weights the snapshots show
    seconds: float = 0.0
    held_out_accuracy: float | None = None  # filled in by :func:`accuracy` (and stored with shipped runs)
    #: The task trained on, when it is not the one of :data:`TASKS` named ``task`` (a custom or changed Task).
    task_object: Task | None = field(default=None, repr=False)

    def the_task(self) -> Task:
        """The :class:`Task` this run was trained on."""
        return self.task_object if self.task_object is not None else TASKS[self.task]

    def weights(self, tokens=None):
        """Attention weights ``(layers, h, T, T)`` of the trained model on ``tokens`` (default: the probe).

        ``tokens``: one sequence of 1 to ``seq_len`` token ids, each in ``0 .. vocab_size - 1``.
        """
        if not self.params:
            raise ValueError(f"this run ({self.task!r}) was shipped without its parameters: only its snapshots "
                             "are there")
        vocab_size = self.config.vocab_size
        tokens = self.probe if tokens is None else as_token_ids(tokens, vocab_size, "tokens", allow_empty=True)
        if tokens.ndim != 1 or not 1 <= len(tokens) <= self.config.seq_len:
            raise ValueError(f"tokens must be one sequence of 1 to {self.config.seq_len} token ids; got shape "
                             f"{tokens.shape}")
        mask = causal_mask(len(tokens)) if self.the_task().causal else None
        _, cache = forward(self.params, tokens[None], self.config, mask)
        return np.stack([w[0] for w in cache["weights"]])

    def smoothed_losses(self, width=10):
        """``(steps, losses)``: the running mean of the loss over ``width`` steps (fewer if the run is shorter).

        ``losses[i]`` is the mean over the steps up to ``steps[i]`` (counted from 1).

        >>> run = TrainingRun("copy", None, {}, 4, 0, np.array([4.0, 2.0, 1.0, 1.0]))
        >>> run.smoothed_losses(width=2)
        (array([2, 3, 4]), array([3. , 1.5, 1. ]))
        """
        losses = np.asarray(self.losses, dtype=float)
        width = max(1, min(as_positive_int(width, "width"), len(losses)))
        curve = np.convolve(losses, np.ones(width) / width, mode="valid")  # (steps - width + 1,)
        return np.arange(width, len(losses) + 1), curve


def held_out_batch(task: Task, size=1000, seed=SEED + 1):
    """Sequences the training never draws from: a separate generator (``seed + 1``; training uses ``seed``)."""
    size = as_positive_int(size, "size")
    return _as_task(task).batch(np.random.default_rng(as_positive_int(seed, "seed", allow_zero=True)), size)


def predict(params, tokens, config, mask=None):
    """The most likely token at every position: ``argmax`` of the logits, shape ``(B, T)``."""
    logits, _ = forward(params, tokens, config, mask)
    return logits.argmax(axis=-1)


def accuracy(run_or_params, task=None, config=None, size=1000, seed=SEED + 1):
    """Fraction of scored positions of ``size`` held-out sequences that the model gets right.

    Pass a :class:`TrainingRun`, or ``params`` with a task (name or :class:`Task`) and a config.
    """
    run = run_or_params if isinstance(run_or_params, TrainingRun) else None
    size = as_positive_int(size, "size")
    if run is not None:
        if not run.params:  # a shipped run without its parameters: the accuracy measured when it was built
            return run.held_out_accuracy
        params, task, config = run.params, run.the_task(), run.config
    else:
        params = run_or_params
        if task is None or config is None:
            raise TypeError("accuracy(params, task, config): give the task and the model's config with params "
                            "(or pass the TrainingRun)")
    task = _as_task(task)
    tokens, targets = held_out_batch(task, size, seed)
    scored = targets >= 0
    right = predict(params, tokens, config, task.mask()) == targets
    result = float(right[scored].mean())
    if run is not None and size == 1000 and seed == SEED + 1:
        run.held_out_accuracy = result
    return result


def _train_inputs(task, steps, seed, batch_size, learning_rate, optimizer, config_changes):
    """The arguments of :func:`train`, checked, with the task's defaults filled in, and the model's config."""
    task = _as_task(task)
    steps = as_positive_int(task.steps if steps is None else steps, "steps")
    seed = as_positive_int(seed, "seed", allow_zero=True)  # an int: None would give a different run each time
    batch_size = as_positive_int(batch_size, "batch_size")
    learning_rate = as_number(task.learning_rate if learning_rate is None else learning_rate, "learning_rate")
    if learning_rate <= 0:
        raise ValueError(f"learning_rate must be > 0 (a step down the gradient); got {learning_rate}")
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {sorted(OPTIMIZERS)}; got {optimizer!r}")
    fixed = sorted({"vocab_size", "seq_len"} & set(config_changes))
    if fixed:
        raise ValueError(f"{', '.join(fixed)} come(s) from the task: change the task instead, for example "
                         f"dataclasses.replace(task, {fixed[0]}=...)")
    for name in ("d_model", "num_layers", "num_heads"):
        if name in config_changes:
            as_positive_int(config_changes[name], name)
    return task, steps, seed, batch_size, learning_rate, ModelConfig.for_task(task, **config_changes)


def train(task, steps=None, seed=SEED, *, batch_size=64, learning_rate=None, optimizer="adam",
          snapshot_steps=(0, 5, 10, 20, 50), progress=None, progress_every=10, **config_changes) -> TrainingRun:
    """Train the tiny model on ``task`` with Adam, seeded and single-threaded.

    ``task``: a key of :data:`TASKS` ("copy previous", "reverse", "induction") or a :class:`Task`; ``steps``: adam
    steps (one fresh batch each); default the task's own; ``seed``: seeds the initial parameters and the training
    batches (held-out data use ``seed + 1``); ``learning_rate``: default the task's own (for Adam); ``optimizer``:
    :func:`adam_step` or :func:`sgd_step`; ``snapshot_steps``: steps at which to keep the attention weights on the
    probe sequence (the final step is always kept); ``progress``: ``progress(step, loss)`` is called every
    ``progress_every`` steps and after the last one; ``**config_changes``: changes to the task's model, for example
    ``use_positions=False``, ``scaled=False``, ``num_heads=2``, ``num_layers=1``, ``d_model=256``.
    """
    task, steps, seed, batch_size, learning_rate, config = _train_inputs(task, steps, seed, batch_size, learning_rate,
                                                                         optimizer, config_changes)
    step_fn = OPTIMIZERS[optimizer]
    rng = np.random.default_rng(seed)
    params = init_params(config, rng)
    mask = task.mask()
    probe = held_out_batch(task, 1, seed=seed + 2)[0][0]  # (T,): one sequence to watch
    run = TrainingRun(task.name, config, params, steps, seed, np.zeros(steps), probe=probe,
                      task_object=None if TASKS.get(task.name) is task else task)
    state = {}
    start = time.perf_counter()
    with one_core():  # one BLAS thread: the same sums in the same order on every run
        for step in range(steps + 1):
            if step in snapshot_steps or step == steps:
                run.snapshots[step] = run.weights()
            if step == steps:
                break
            tokens, targets = task.batch(rng, batch_size)
            try:
                with np.errstate(over="raise", invalid="raise", divide="raise"):
                    loss, grads, _ = loss_and_grads(params, tokens, targets, config, mask)
                    step_fn(params, grads, state, learning_rate)
            except FloatingPointError:
                loss = np.inf  # the numbers overflowed: reported below as divergence
            run.losses[step] = loss
            if not np.isfinite(loss) or loss > DIVERGED * run.losses[0]:
                raise FloatingPointError(
                    f"training diverged at step {step + 1}: the loss went from {run.losses[0]:.3g} to {loss:.3g} "
                    f"with {optimizer} at learning_rate={learning_rate:g}; try a smaller learning rate "
                    f"(for example {learning_rate / 10:g})")
            if progress is not None and ((step + 1) % progress_every == 0 or step + 1 == steps):
                progress(step + 1, loss)
    run.seconds = time.perf_counter() - start
    return run



# ---------------------------------------------------------------------------------------------- shipped runs

#: The runs shipped in ``attn_helpers/data/nb11_runs.npz`` (built by ``tools/build_training_runs.py``):
#: name -> (task, changes to the task's model). A class can load them instead of training.
SHIPPED_RUNS = {
    "copy previous": ("copy previous", {}),
    "reverse": ("reverse", {}),
    "induction": ("induction", {}),
    # the ablations of notebook 11
    "reverse, no positions": ("reverse", {"use_positions": False}),
    "reverse, d_model 128, scaled": ("reverse", {"d_model": 128}),
    "reverse, d_model 128, unscaled": ("reverse", {"d_model": 128, "scaled": False}),
    "induction, 1 layer, 1 head": ("induction", {"num_layers": 1}),
    "induction, 1 layer, 2 heads": ("induction", {"num_layers": 1, "num_heads": 2}),
}

#: The ablations: only their history (losses, snapshots, accuracy) is shipped, not their parameters.
HISTORY_ONLY = tuple(name for name in SHIPPED_RUNS if "," in name)

#: Steps at which the shipped runs keep a snapshot of the attention weights.
SHIPPED_SNAPSHOTS = (0, 2, 4, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50, 75, 100, 150, 200, 300, 400, 500, 600)

SHIPPED_PATH = Path(__file__).resolve().parent / "data" / "nb11_runs.npz"


def shipped_run(name, snapshot_steps=SHIPPED_SNAPSHOTS) -> TrainingRun:
    """Train the shipped run ``name`` from scratch and measure its held-out accuracy (what the tool stores)."""
    task, changes = SHIPPED_RUNS[name]
    run = train(task, snapshot_steps=snapshot_steps, **changes)
    accuracy(run)
    if name in HISTORY_ONLY:
        run.params = {}
    return run


def load_runs(path=SHIPPED_PATH) -> dict:
    """Load the runs saved by ``tools/save_models.py``'s ``save_runs``: a dict name -> :class:`TrainingRun`."""
    runs = {}
    with np.load(path) as data:
        names = sorted({key.rsplit("/", 1)[0] for key in data.files if key.endswith("/meta")})
        for name in names:
            vocab, seq_len, d, layers, heads, positions, scaled, steps, seed = (int(v) for v in data[f"{name}/meta"])
            kind = str(data[f"{name}/positions"]) if f"{name}/positions" in data.files else "learned"
            config = ModelConfig(vocab, seq_len, d, layers, heads, bool(positions), bool(scaled), kind)
            params = {key.rsplit("/", 1)[1]: data[key] for key in data.files if key.startswith(f"{name}/param/")}
            snapshots = {int(key.rsplit("/", 1)[1]): data[key] for key in data.files
                         if key.startswith(f"{name}/snapshot/")}
            measured = float(data[f"{name}/accuracy"])
            runs[name] = TrainingRun(str(data[f"{name}/task"]), config, params, steps, seed, data[f"{name}/losses"],
                                     dict(sorted(snapshots.items())), probe=data[f"{name}/probe"],
                                     held_out_accuracy=None if np.isnan(measured) else measured)
    return runs
