"""Exercise checkers: ``check_*`` functions that grade a learner's answer with a hint.

Each notebook's checkers live in their own module (``nb00``, ``nb01``, ...); this
package re-exports them by name, so a notebook can write
``from attn_helpers.checks import check_softmax, solution``. A new notebook's module
adds one import line below and its names to ``__all__`` (``tests/test_checks.py``
fails when a ``check_*`` function of a module is missing here).

Checkers never raise and never hang: whatever they are given (``None``, a list, the
wrong shape, a function that crashes, calls ``sys.exit()`` or loops forever) they
answer with a :class:`Verdict`.
"""

from ._grader import Case, Verdict, Wrong, grade_function, grade_value, register_solution, solution
from .nb00 import check_first_token_share, check_mean_embedding, check_num_tokens
from .nb01 import check_cosine_scores, check_one_hot, check_shared_neighbours
from .nb02 import check_best_key, check_dot_score, check_score_matrix
from .nb03 import NOTES_SCORES, NOTES_WEIGHTS, check_cold_choice, check_softmax_any_axis, check_spot_the_slip
from .nb04 import check_context_vectors, check_doubled_weights
from .nb05 import (
    check_asymmetric_keys,
    check_changed_rows,
    check_roamed_keys,
    check_score_slip,
    check_self_attention_qkv,
)
from .nb06 import check_attention_scale, check_scaled_scores, check_score_std_prediction
from .nb07 import check_causal_mask, check_masked_attention, check_masked_key_prediction
from .nb08 import (
    check_merge_heads,
    check_parameter_count,
    check_parameter_count_with_biases,
    check_split_heads,
    check_weights_shape,
)
from .nb09 import check_length_prediction, check_order_prediction, check_sinusoidal_encoding
from .nb10 import check_decoder_changed_rows, check_gpt2_parameter_count, check_layer_norm, check_pre_norm_block
from .nb11 import check_attention_prediction, check_softmax_backward, check_training_prediction
from .nb12 import (
    check_ablation_prediction,
    check_previous_token_head,
    check_previous_token_weight,
    check_sink_prediction,
)
from .nb13 import check_cache_prediction, check_online_attention, check_online_softmax, check_skipped_tiles
from .nb14 import check_layer_norm_backward, check_merge_pair, check_top_p

__all__ = [
    # the grading machinery
    "Case", "Verdict", "Wrong", "grade_function", "grade_value", "register_solution", "solution",
    # 00 Start here
    "check_first_token_share",
    "check_mean_embedding",
    "check_num_tokens",
    # 01 Embeddings
    "check_cosine_scores",
    "check_one_hot",
    "check_shared_neighbours",
    # 02 Dot-product scores
    "check_best_key",
    "check_dot_score",
    "check_score_matrix",
    # 03 Softmax
    "check_cold_choice",
    "check_softmax_any_axis",
    "check_spot_the_slip",
    "NOTES_SCORES",
    "NOTES_WEIGHTS",
    # 04 Context vectors
    "check_context_vectors",
    "check_doubled_weights",
    # 05 Q, K and V projections
    "check_asymmetric_keys",
    "check_changed_rows",
    "check_roamed_keys",
    "check_score_slip",
    "check_self_attention_qkv",
    # 06 Scaling by √d_k
    "check_attention_scale",
    "check_scaled_scores",
    "check_score_std_prediction",
    # 07 Causal masking
    "check_causal_mask",
    "check_masked_attention",
    "check_masked_key_prediction",
    # 08 Multi-head attention
    "check_merge_heads",
    "check_parameter_count",
    "check_parameter_count_with_biases",
    "check_split_heads",
    "check_weights_shape",
    # 09 Word order and positions
    "check_length_prediction",
    "check_order_prediction",
    "check_sinusoidal_encoding",
    # 10 The transformer block
    "check_decoder_changed_rows",
    "check_gpt2_parameter_count",
    "check_layer_norm",
    "check_pre_norm_block",
    # 11 Training attention in numpy
    "check_attention_prediction",
    "check_softmax_backward",
    "check_training_prediction",
    # 12 A real pretrained model
    "check_ablation_prediction",
    "check_previous_token_head",
    "check_previous_token_weight",
    "check_sink_prediction",
    # 13 What attention costs, and how real systems make it cheap
    "check_cache_prediction",
    "check_online_attention",
    "check_online_softmax",
    "check_skipped_tiles",
    "check_layer_norm_backward", "check_merge_pair", "check_top_p",  # 14 A tiny GPT of your own
]
