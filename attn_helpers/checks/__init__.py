"""Exercise checkers: ``check_*`` functions that grade a learner's answer with a hint, one module per notebook.

A notebook writes ``from attn_helpers.checks import check_softmax, solution``; a new notebook's module adds one
import line and its names to ``__all__`` below. Checkers never raise and never hang: whatever they are given
(``None``, a list, the wrong shape, a function that crashes or loops forever) they answer with a :class:`Verdict`.
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
from .nb10 import (
    check_decoder_changed_rows,
    check_dropout_mean,
    check_gpt2_parameter_count,
    check_layer_norm,
    check_pre_norm_block,
)
from .nb11 import (
    check_attention_prediction,
    check_induction_prediction,
    check_softmax_backward,
    check_training_prediction,
)
from .nb12 import (
    check_ablation_prediction,
    check_previous_token_head,
    check_previous_token_weight,
    check_sink_prediction,
    check_two_back_head,
)
from .nb13 import (
    check_attention_by_splits,
    check_cache_prediction,
    check_merge_softmax_states,
    check_online_attention,
    check_online_softmax,
    check_skipped_tiles,
)
from .nb14 import (
    check_first_pair,
    check_layer_norm_backward,
    check_merge_pair,
)
from .nb15 import (
    check_previous_token_heads,
    check_top_p,
)
from .nb16 import (
    check_cache_size_prediction,
    check_induction_layers_prediction,
    check_induction_score,
    check_late_sink_prediction,
    check_q4_1_block,
    check_shared_kv_heads,
)
from .nb17 import (
    check_absorbed_query,
    check_latent_cache_prediction,
    check_linear_step,
    check_recall_prediction,
    check_rolling_slot,
    check_sink_weights,
    check_top_k_mask,
    check_window_loss_prediction,
)

__all__ = [
    "Case", "Verdict", "Wrong", "grade_function", "grade_value", "register_solution", "solution",  # the machinery
    "check_first_token_share", "check_mean_embedding", "check_num_tokens",  # 00 Start here
    "check_cosine_scores", "check_one_hot", "check_shared_neighbours",  # 01 Embeddings
    "check_best_key", "check_dot_score", "check_score_matrix",  # 02 Dot-product scores
    "check_cold_choice", "check_softmax_any_axis", "check_spot_the_slip", "NOTES_SCORES", "NOTES_WEIGHTS",  # 03
    "check_context_vectors", "check_doubled_weights",  # 04 Context vectors
    "check_asymmetric_keys", "check_changed_rows", "check_roamed_keys", "check_score_slip",  # 05 Q, K and V
    "check_self_attention_qkv",
    "check_attention_scale", "check_scaled_scores", "check_score_std_prediction",  # 06 Scaling by √d_k
    "check_causal_mask", "check_masked_attention", "check_masked_key_prediction",  # 07 Causal masking
    "check_merge_heads", "check_parameter_count", "check_parameter_count_with_biases",  # 08 Multi-head attention
    "check_split_heads", "check_weights_shape",
    "check_length_prediction", "check_order_prediction", "check_sinusoidal_encoding",  # 09 Positions
    "check_decoder_changed_rows", "check_gpt2_parameter_count", "check_layer_norm",  # 10 The transformer block
    "check_pre_norm_block",
    "check_dropout_mean",
    "check_attention_prediction", "check_induction_prediction", "check_softmax_backward",  # 11 Training
    "check_training_prediction",
    "check_ablation_prediction", "check_previous_token_head", "check_previous_token_weight",  # 12 Pretrained
    "check_sink_prediction", "check_two_back_head",
    "check_cache_prediction", "check_online_attention", "check_online_softmax", "check_skipped_tiles",  # 13 Cost
    "check_attention_by_splits", "check_merge_softmax_states",
    "check_first_pair", "check_layer_norm_backward", "check_merge_pair",  # 14 GPT, part 1
    "check_previous_token_heads", "check_top_p",  # 15 GPT, part 2
    "check_cache_size_prediction", "check_induction_layers_prediction", "check_induction_score",  # 16 A real LLM
    "check_late_sink_prediction", "check_q4_1_block", "check_shared_kv_heads",
    "check_absorbed_query", "check_latent_cache_prediction", "check_linear_step",  # 17 Today's attention
    "check_recall_prediction", "check_rolling_slot", "check_sink_weights", "check_top_k_mask",
    "check_window_loss_prediction",
]
