"""What notebook 15 measures about its trained tiny GPT, over many samples and windows rather than one.

* :func:`known_word_share`: how many of a text's words occur in the training text (invented words do not);
* :func:`sample_word_shares`: that share for samples of the GPT and of the bigram baseline, drawn alike;
* :func:`head_habits`: each head's weight on the previous token and on the window's first token, window by window.
"""

from __future__ import annotations

import re

import numpy as np

from .config import SEED, one_core
from .gpt import attention_weights, generate_ids, ngram_probs, sample_next

__all__ = ["known_word_share", "bigram_log_probs", "sample_word_shares", "head_habits"]

WORD = re.compile(r"[A-Za-z]+")


def known_word_share(texts, reference_text):
    """The share of the words (runs of letters) of ``texts`` that are also words of ``reference_text``.

    >>> known_word_share(["the cat sat", "a dgo"], "the cat sat on a mat.")   # dgo is not a word of it
    0.8
    """
    known = set(WORD.findall(reference_text))
    words = [word for text in texts for word in WORD.findall(text)]
    return sum(word in known for word in words) / len(words)


def bigram_log_probs(train_ids, vocab_size, alpha=1.0):
    r"""``log p(b | a)`` of the bigram baseline of :func:`~attn_helpers.gpt.ngram_losses`, shape ``(V, V)``.

    .. math:: p(b \mid a) = \frac{n_{ab} + \alpha\, p(b)}{n_a + \alpha}, \qquad p(b) = \frac{n_b + 1}{N + V}

    >>> np.exp(bigram_log_probs([0, 1, 0, 1], 3)).sum(axis=1).round(6)
    array([1., 1., 1.])
    """
    return np.log(ngram_probs(np.asarray(train_ids), vocab_size, alpha)[1])  # the baseline's own probabilities


def sample_word_shares(model, train_ids, train_text, prompt, *, samples=20, length=60, seed=SEED, baseline=True,
                       **settings):
    """:func:`known_word_share` of ``samples`` continuations of ``prompt`` (``length`` tokens each), for the
    model and (with ``baseline``) for the bigram baseline, both drawn with the same sampling ``settings``
    (temperature, top_k, top_p) from one ``np.random.default_rng(seed)`` each. The prompt's words are not counted.

    Returns ``{"tiny GPT": share, "bigram": share}`` (without ``baseline``: only ``"tiny GPT"``).
    """
    tokenizer = model.tokenizer
    prompt_ids, prompt_words = tokenizer.encode(prompt), len(WORD.findall(prompt))
    log_probs = bigram_log_probs(train_ids, tokenizer.vocab_size) if baseline else None  # (V, V)

    def bigram_ids(rng):
        ids = list(prompt_ids)
        for _ in range(length):
            ids.append(sample_next(log_probs[ids[-1]], rng=rng, **settings))  # the bigram sees one token back
        return ids

    rngs = {"tiny GPT": np.random.default_rng(seed), "bigram": np.random.default_rng(seed)}
    draw = {"tiny GPT": lambda rng: generate_ids(model.decoder, prompt_ids, length, context_length=model.context_length,
                                                 rng=rng, **settings),
            "bigram": bigram_ids}
    if not baseline:
        del draw["bigram"]
    shares = {}
    for name, sample in draw.items():
        texts = [" ".join(WORD.findall(tokenizer.decode(sample(rngs[name])))[prompt_words:]) for _ in range(samples)]
        shares[name] = known_word_share(texts, train_text)
    return shares


def head_habits(decoder, ids, *, windows=64, length=64, starts_word=None):
    """Each head's attention habits on ``windows`` windows of ``length`` tokens, evenly spaced along ``ids``.

    The weights are those :func:`~attn_helpers.gpt.decoder_forward` computes
    (:func:`~attn_helpers.gpt.attention_weights`).
    ``starts_word``: optional, a boolean per token id, True for a token that begins a word (a leading space).

    Returns a dict of ``(windows, layers, heads)`` arrays: ``"previous"``, the mean weight of queries
    ``1 .. length - 1`` on the key just before them; ``"first"``, their mean weight on key 0 (the window's first
    token); with ``starts_word``, ``"previous, word start"``: the mean weight on the previous token of the queries
    whose token begins a word. ``"chance"``: the weight on one key if each query spread its weight evenly.
    """
    ids = np.asarray(ids)
    starts = np.linspace(0, len(ids) - length, windows).astype(int)
    batch = ids[starts[:, None] + np.arange(length)]  # (windows, T)
    with one_core():  # small products: one BLAS thread is faster on a shared machine
        weights = attention_weights(decoder, batch)  # (windows, layers, h, T, T)
    rows = np.arange(1, length)
    on_previous = weights[..., rows, rows - 1]  # (windows, layers, h, T - 1)
    habits = {"previous": on_previous.mean(axis=-1), "first": weights[..., rows, 0].mean(axis=-1),
              "chance": float(np.mean(1 / (rows + 1)))}
    if starts_word is not None:
        begins = np.asarray(starts_word)[batch[:, rows]][:, None, None, :]  # (windows, 1, 1, T - 1)
        habits["previous, word start"] = (on_previous * begins).sum(axis=-1) / begins.sum(axis=-1)
    return habits
