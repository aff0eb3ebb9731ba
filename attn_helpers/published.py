"""Published model configurations: one table, each row with where its numbers are from.

Notebook 10 counts GPT-2's parameters from it (:data:`~attn_helpers.examples.GPT2_FAMILY`), notebook 13 sizes
the KV caches of its rows (:func:`~attn_helpers.kv_cache.cache_table`), notebook 15 counts Llama 2 7B's
parameters (:data:`~attn_helpers.llama.LLAMA2_7B`).

>>> PUBLISHED_CONFIGS["Mistral 7B"]["num_kv_heads"]
8
"""

__all__ = ["CONFIG_COLUMNS", "PUBLISHED_CONFIGS", "ATTENTION_VARIANTS"]

CONFIG_COLUMNS = ("num_layers", "num_heads", "num_kv_heads", "head_dim", "context_length")
_CONFIG_ROWS = {  # layers, query heads h, key/value heads h_kv, head width d_h, context length (tokens)
    "GPT-2 small": (12, 12, 12, 64, 1024),
    "GPT-2 medium": (24, 16, 16, 64, 1024),
    "GPT-2 large": (36, 20, 20, 64, 1024),
    "GPT-2 XL": (48, 25, 25, 64, 1024),
    "Llama 2 7B": (32, 32, 32, 128, 4096),
    "Llama 2 70B": (80, 64, 8, 128, 4096),
    "Mistral 7B": (32, 32, 8, 128, 8192),
    "Falcon 7B": (32, 71, 1, 64, 2048),
    "PaLM 540B": (118, 48, 1, 256, 2048),
}
_CONFIG_SOURCES = {
    "GPT-2 small": "Radford et al. 2019; Hugging Face openai-community/gpt2 config.json: n_layer 12, n_head 12, "
                   "n_embd 768 (so d_h = 64), n_ctx 1024, vocab_size 50257",
    "GPT-2 medium": "Radford et al. 2019, Table 2; openai-community/gpt2-medium config.json: n_layer 24, n_head 16, "
                    "n_embd 1024",
    "GPT-2 large": "Radford et al. 2019, Table 2; openai-community/gpt2-large config.json: n_layer 36, n_head 20, "
                   "n_embd 1280",
    "GPT-2 XL": "Radford et al. 2019, Table 2; openai-community/gpt2-xl config.json: n_layer 48, n_head 25, "
                "n_embd 1600",
    "Llama 2 7B": "Touvron et al. 2023, Llama 2, Table 1 (context 4k, no GQA at 7B); meta-llama/Llama-2-7b-hf "
                  "config.json: num_hidden_layers 32, num_attention_heads 32, num_key_value_heads 32, hidden_size "
                  "4096, "
                  "intermediate_size 11008, vocab_size 32000, rms_norm_eps 1e-5 (1e-6 in the first release), "
                  "tie_word_embeddings false, no biases",
    "Llama 2 70B": "Touvron et al. 2023, Llama 2, Table 1 (context 4k, GQA at 34B and 70B); meta-llama/Llama-2-70b-hf "
                   "config.json: num_hidden_layers 80, num_attention_heads 64, num_key_value_heads 8, hidden_size 8192",
    "Mistral 7B": "Jiang et al. 2023, Mistral 7B, Table 1: n_layers 32, head_dim 128, n_heads 32, n_kv_heads 8, "
                  "context_len 8192; its sliding window of 4096 caps the cache it really keeps (a rolling buffer)",
    "Falcon 7B": "tiiuae/falcon-7b config.json: n_layer 32, n_head 71, hidden_size 4544 (d_h = 64), multi_query true; "
                 "model card: sequence length 2048",
    "PaLM 540B": "Chowdhery et al. 2022, PaLM, Table 1 and section 2: 118 layers, 48 heads, d_model 18432, head size "
                 "always 256, multi-query attention, sequence length 2048",
}

_SIZES = {  # widths and vocabulary where a lesson counts parameters (notebooks 10 and 14); GPT-2's d_ff = 4 d_model
    **{name: {"d_model": d, "d_ff": 4 * d, "vocab_size": 50257}
       for name, d in (("GPT-2 small", 768), ("GPT-2 medium", 1024), ("GPT-2 large", 1280), ("GPT-2 XL", 1600))},
    "Llama 2 7B": {"d_model": 4096, "d_ff": 11008, "vocab_size": 32000},
}

#: Published decoder configurations: layers, query heads, key/value heads, head width, context length (and
#: for Llama 2 7B its widths and vocabulary), and where the numbers are from (``source``).
PUBLISHED_CONFIGS = {name: {**dict(zip(CONFIG_COLUMNS, row)), **_SIZES.get(name, {}), "source": _CONFIG_SOURCES[name]}
                     for name, row in _CONFIG_ROWS.items()}

#: How today's models attend (notebook 17): window sizes, interleaving, latent widths, hybrid ratios, sparse top-k,
#: each with the configuration or paper it is from (``source``). Kept apart from :data:`PUBLISHED_CONFIGS`, whose
#: rows notebook 13's cache table lists.
ATTENTION_VARIANTS = {
    "Mistral 7B": {"num_layers": 32, "num_kv_heads": 8, "head_dim": 128, "window": 4096, "global_every": None,
                   "source": "Jiang et al. 2023, Mistral 7B, Table 1: n_layers 32, head_dim 128, n_kv_heads 8, "
                             "window_size 4096; section 2: a rolling buffer cache of W = 4096 positions"},
    "Gemma 3 27B": {"num_layers": 62, "num_kv_heads": 16, "head_dim": 128, "window": 1024, "global_every": 6,
                    "source": "Gemma Team 2025, Gemma 3 technical report, section 2 (5 local layers for 1 global, "
                              "local span 1024 tokens); google/gemma-3-27b-pt config.json text_config: "
                              "num_hidden_layers 62, num_key_value_heads 16, head_dim 128, sliding_window 1024, "
                              "sliding_window_pattern 6"},
    "gpt-oss-20b": {"num_layers": 24, "num_kv_heads": 8, "head_dim": 64, "window": 128, "global_every": 2,
                    "source": "OpenAI 2025, gpt-oss-120b & gpt-oss-20b model card, section 2.2 (alternating banded "
                              "window of 128 tokens and dense layers, a learned sink logit per head); "
                              "openai/gpt-oss-20b config.json: num_hidden_layers 24, num_key_value_heads 8, head_dim "
                              "64, sliding_window 128, layer_types sliding/full alternating"},
    "DeepSeek-V3": {"num_layers": 61, "num_heads": 128, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
                    "qk_nope_head_dim": 128, "v_head_dim": 128,
                    "source": "DeepSeek-AI 2024, DeepSeek-V3 technical report, section 2.1.1 (MLA, d_c = 512, "
                              "d_h^R = 64); deepseek-ai/DeepSeek-V3 config.json: num_hidden_layers 61, "
                              "num_attention_heads 128, kv_lora_rank 512, qk_rope_head_dim 64, qk_nope_head_dim 128, "
                              "v_head_dim 128"},
    "DeepSeek-V3.2-Exp": {"index_topk": 2048, "index_n_heads": 64, "index_head_dim": 128,
                          "source": "DeepSeek-AI 2025, DeepSeek-V3.2-Exp report (DeepSeek Sparse Attention: a "
                                    "lightning indexer picks 2048 keys per query); deepseek-ai/DeepSeek-V3.2-Exp "
                                    "config.json: index_topk 2048, index_n_heads 64, index_head_dim 128"},
    "Qwen3-Next-80B-A3B": {"linear_per_full": 3,
                           "source": "Qwen team 2025, Qwen3-Next blog and Qwen/Qwen3-Next-80B-A3B-Instruct "
                                     "config.json: full_attention_interval 4 (3 Gated DeltaNet layers, then 1 "
                                     "gated full-attention layer)"},
    "Kimi Linear 48B": {"linear_per_full": 3,
                        "source": "Kimi Team 2025, Kimi Linear technical report, section 1 and 5: a 3:1 ratio of "
                                  "Kimi Delta Attention layers to full (MLA) layers"},
}
