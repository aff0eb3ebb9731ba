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
from .nb00 import check_mean_embedding, check_num_tokens
from .nb01 import check_cosine_scores, check_one_hot
from .nb02 import check_dot_score, check_score_matrix
from .nb03 import check_softmax_any_axis
from .nb04 import check_context_vectors
from .nb05 import check_asymmetric_keys, check_self_attention_qkv
from .nb06 import check_attention_scale, check_scaled_scores
from .nb07 import check_causal_mask, check_masked_attention
from .nb08 import check_merge_heads, check_parameter_count, check_split_heads

__all__ = [
    # the grading machinery
    "Case", "Verdict", "Wrong", "grade_function", "grade_value", "register_solution", "solution",
    # 00 start here
    "check_mean_embedding", "check_num_tokens",
    # 01 embeddings
    "check_one_hot", "check_cosine_scores",
    # 02 dot-product scores
    "check_dot_score", "check_score_matrix",
    # 03 softmax
    "check_softmax_any_axis",
    # 04 context vectors
    "check_context_vectors",
    # 05 Q, K, V projections
    "check_self_attention_qkv", "check_asymmetric_keys",
    # 06 scaling by sqrt(d_k)
    "check_attention_scale", "check_scaled_scores",
    # 07 causal masking
    "check_causal_mask", "check_masked_attention",
    # 08 multi-head attention
    "check_split_heads", "check_merge_heads", "check_parameter_count",
]
