"""Notebook 01's first picture draws the lookup it teaches: row ``token_ids[i]`` of the table E becomes row i of X."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from attn_helpers.examples import JOURNEY_TOKENS, journey_embeddings  # noqa: E402
from attn_helpers.plotting import token_colour  # noqa: E402
from attn_helpers.widgets.nb01 import draw_lookup  # noqa: E402


@pytest.mark.parametrize("vocabulary", [None, list(reversed(JOURNEY_TOKENS))])
def test_each_arrow_joins_the_tokens_table_row_to_its_row_of_X(vocabulary):
    fig = plt.figure(figsize=(10, 4), layout="constrained")
    try:
        token_ids = draw_lookup(fig, JOURNEY_TOKENS, vocabulary=vocabulary)
        words = sorted(JOURNEY_TOKENS, key=str.lower) if vocabulary is None else vocabulary
        np.testing.assert_array_equal([words[t] for t in token_ids], JOURNEY_TOKENS)  # the id names the token
        np.testing.assert_allclose(fig.handles["X"], journey_embeddings())  # exactly notebook 00's X
        left, _, right = fig.axes[:3]
        for i, (token, arrow) in enumerate(zip(JOURNEY_TOKENS, fig.handles["arrows"], strict=True)):
            assert arrow.xy1[1] == token_ids[i] and arrow.xy2[1] == i, (token, arrow.xy1, arrow.xy2)
            assert arrow.coords1 is left.transData and arrow.coords2 is right.transData
            assert matplotlib.colors.same_color(arrow.get_edgecolor(), token_colour(token, i))
        shown = right.images[0].get_array()
        np.testing.assert_allclose(shown, fig.handles["X"])  # the right panel draws X, not the table
    finally:
        plt.close(fig)
