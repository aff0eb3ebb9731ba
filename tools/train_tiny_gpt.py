"""Train notebook 14's tiny GPT on *Pride and Prejudice* and write ``attn_helpers/data/tiny_gpt.npz``.

The recipe: a byte-pair encoding of vocabulary 512 learned from the training split; a GPT of
2 pre-norm blocks, d_model 64, 4 heads, context 64 tokens (:func:`attn_helpers.gpt.init_tiny_gpt`);
4,000 steps of Adam on batches of 16 random windows (:func:`attn_helpers.gpt.train_gpt`), learning
rate 3e-3 with 100 warm-up steps and a cosine decay. Every gradient is
:func:`attn_helpers.gpt.gpt_loss_and_grads`, written out in numpy. One core (BLAS limited to one
thread); about 15 minutes on a laptop.

Run ``python tools/train_tiny_gpt.py`` from the repository's root; it prints the SHA-256 to
write into ``attn_helpers/gpt.py`` (``WEIGHTS_SHA256``).
"""

from __future__ import annotations

import json
import pathlib
import sys
import time

from threadpoolctl import threadpool_limits

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # save_models
from save_models import save_tiny_gpt  # noqa: E402  (tools/save_models.py)

from attn_helpers.bpe import train_bpe  # noqa: E402
from attn_helpers.gpt import (  # noqa: E402
    WEIGHTS_PATH,
    TinyGPT,
    corpus_split,
    init_tiny_gpt,
    mean_loss,
    ngram_losses,
    train_gpt,  # noqa: E402
)

RECIPE = {"vocab_size": 512, "d_model": 64, "num_heads": 4, "num_layers": 2, "context_length": 64, "steps": 4000,
          "batch_size": 16, "learning_rate": 3e-3, "warmup": 100, "seed": 0}


def main(steps=RECIPE["steps"]):
    r = {**RECIPE, "steps": steps}
    train_text, val_text = corpus_split("train"), corpus_split("val")
    tokenizer = train_bpe(train_text, r["vocab_size"])
    train_ids, val_ids = tokenizer.encode(train_text), tokenizer.encode(val_text)
    print(f"{len(train_ids):,} training tokens, {len(val_ids):,} validation tokens", flush=True)
    decoder = init_tiny_gpt(r["vocab_size"], r["d_model"], r["num_heads"], r["num_layers"], seed=r["seed"])
    start, cpu_start = time.perf_counter(), time.process_time()

    def report(step, loss):
        if step % 100 == 0 or step == steps - 1:
            print(f"step {step:5d}  loss {loss:.3f}  {time.perf_counter() - start:6.0f} s", flush=True)

    decoder, losses = train_gpt(decoder, train_ids, steps, batch_size=r["batch_size"],
                                context_length=r["context_length"], learning_rate=r["learning_rate"],
                                seed=r["seed"], warmup=r["warmup"], callback=report)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    val_loss = mean_loss(decoder, val_ids, r["context_length"])
    baselines = ngram_losses(train_ids, val_ids, r["vocab_size"], r["context_length"])
    record = {"recipe": r, "seconds": round(seconds, 1), "cpu_seconds": round(cpu_seconds, 1),
              "losses": [round(float(x), 4) for x in losses],
              "val_loss": round(val_loss, 4), "baselines": {k: round(v, 4) for k, v in baselines.items()}}
    model = TinyGPT(decoder, tokenizer, r["context_length"], record)
    digest = save_tiny_gpt(model, WEIGHTS_PATH)
    print(json.dumps({k: v for k, v in record.items() if k != "losses"}, indent=1))
    print(f"wrote {WEIGHTS_PATH} ({WEIGHTS_PATH.stat().st_size:,} bytes), SHA-256 {digest}")


if __name__ == "__main__":
    with threadpool_limits(1):
        main(*(int(a) for a in sys.argv[1:]))
