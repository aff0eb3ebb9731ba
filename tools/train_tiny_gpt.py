"""Train the tiny GPT of notebooks 14 and 15 on *Pride and Prejudice* and write ``attn_helpers/data/tiny_gpt.npz``.

The recipe: a byte-pair encoding of vocabulary 512 learned from the training split; a GPT of
2 pre-norm blocks, d_model 64, 4 heads, context 64 tokens (:func:`attn_helpers.gpt.init_tiny_gpt`);
4,000 steps of Adam on batches of 16 random windows (:func:`attn_helpers.gpt.train_gpt`), learning
rate 3e-3 with 100 warm-up steps and a cosine decay. Every gradient is
:func:`attn_helpers.gpt.gpt_loss_and_grads`, written out in numpy. One core (BLAS limited to one
thread); about 15 minutes on a laptop.

Run ``python tools/train_tiny_gpt.py`` from the repository's root; it prints the SHA-256 to
write into ``attn_helpers/gpt.py`` (``WEIGHTS_SHA256``).

``--dropout P`` trains with dropout ``P`` in every block (notebook 10), ``--steps N`` changes the number of
steps, and ``--out PATH.json`` writes only the training record (recipe, loss curve every 10 steps, training
and validation loss measured alike, the corpus's SHA-256 and the code's commit) instead of the weights, so the
shipped model is not overwritten: ``python tools/train_tiny_gpt.py --dropout 0.1 --out
attn_helpers/data/tiny_gpt_dropout_record.json`` made notebook 15's dropout comparison.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pathlib
import subprocess
import sys
import time

from threadpoolctl import threadpool_limits

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # save_models
from save_models import save_tiny_gpt  # noqa: E402  (tools/save_models.py)

from attn_helpers.bpe import train_bpe  # noqa: E402
from attn_helpers.gpt import (  # noqa: E402
    CORPUS_PATH,
    WEIGHTS_PATH,
    TinyGPT,
    corpus_split,
    init_tiny_gpt,
    load_tiny_gpt,
    mean_loss,
    ngram_losses,
    train_gpt,  # noqa: E402
)

RECIPE = {"vocab_size": 512, "d_model": 64, "num_heads": 4, "num_layers": 2, "context_length": 64, "steps": 4000,
          "batch_size": 16, "learning_rate": 3e-3, "warmup": 100, "seed": 0}


def measured(decoder, train_ids, val_ids, context_length):
    """The training and the validation loss, both by ``mean_loss`` on every window of the ids (dropout off)."""
    return {"train_loss": round(mean_loss(decoder, train_ids, context_length), 4),
            "val_loss": round(mean_loss(decoder, val_ids, context_length), 4)}


def main(steps=RECIPE["steps"], dropout=0.0, out=WEIGHTS_PATH):
    r = {**RECIPE, "steps": steps, "dropout": dropout}
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()  # the code
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
                                seed=r["seed"], warmup=r["warmup"], callback=report, dropout=dropout)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    if pathlib.Path(out).suffix == ".json":  # the record alone, with the shipped model's losses measured alike
        record = {"recipe": r, "seconds": round(seconds, 1), "cpu_seconds": round(cpu_seconds, 1),
                  "steps": list(range(0, steps, 10)), "losses": [round(float(x), 4) for x in losses[::10]],
                  **measured(decoder, train_ids, val_ids, r["context_length"]),
                  "shipped": measured(load_tiny_gpt().decoder, train_ids, val_ids, r["context_length"]),
                  "corpus_sha256": hashlib.sha256(CORPUS_PATH.read_bytes()).hexdigest(), "commit": commit}
        pathlib.Path(out).write_text(json.dumps(record, indent=1) + "\n")
        print(json.dumps({k: v for k, v in record.items() if k not in ("steps", "losses")}, indent=1))
        return print(f"wrote {out}")
    val_loss = mean_loss(decoder, val_ids, r["context_length"])
    baselines = ngram_losses(train_ids, val_ids, r["vocab_size"], r["context_length"])
    record = {"recipe": r, "seconds": round(seconds, 1), "cpu_seconds": round(cpu_seconds, 1),
              "losses": [round(float(x), 4) for x in losses],
              "val_loss": round(val_loss, 4), "baselines": {k: round(v, 4) for k, v in baselines.items()}}
    model = TinyGPT(decoder, tokenizer, r["context_length"], record)
    digest = save_tiny_gpt(model, out)
    print(json.dumps({k: v for k, v in record.items() if k != "losses"}, indent=1))
    print(f"wrote {out} ({pathlib.Path(out).stat().st_size:,} bytes), SHA-256 {digest}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=RECIPE["steps"])
    parser.add_argument("--dropout", type=float, default=0.0, help="every block's dropout rate while training")
    parser.add_argument("--out", type=pathlib.Path, default=WEIGHTS_PATH,
                        help="the .npz of weights (default: the shipped model), or a .json for the record alone")
    args = parser.parse_args()
    with threadpool_limits(1):
        main(args.steps, args.dropout, args.out)
