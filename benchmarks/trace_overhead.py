"""Cost of looking inside: traced vs fast forward, uncached vs cached decoding.

Prints, for one model and one batch in one run:
  traced forward time / fast forward time          (goal <= 1.3)
  uncached / cached greedy decoding, 40 new tokens (goal >= 3)

    python benchmarks/trace_overhead.py [--checkpoint checkpoints/memtransformer_10] [--batch 32]

Without --checkpoint it uses random weights at the paper's small
configuration (d_model 128, d_ff 512, 8 heads, 4+4 layers, 10 memory slots,
vocabulary 8000); timing does not depend on the weights.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from inference.core.checkpoint import load_checkpoint
from inference.core.decoding import pad_batch
from inference.core.family import LoadedModel, build_model, config_from_dict
from inference.core.interventions import Interventions
from inference.core.tokenizer import train_bpe
from inference.core.tracing import recording
from inference.families.memory_transformer.decoding import greedy_decode

SENTENCES = [
    "Ein Mann mit einem orangefarbenen Hut starrt auf etwas.",
    "Zwei junge Männer spielen auf einer Wiese Fußball, während ein Hund zuschaut.",
    "Eine Frau in einem blauen Kleid liest auf einer Parkbank ein dickes Buch.",
    "Kinder springen am Strand in die Wellen und lachen laut.",
]


def median_seconds(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def random_model() -> LoadedModel:
    tokenizer = train_bpe(SENTENCES * 10, vocab_size=400)
    torch.manual_seed(0)
    model = build_model(
        config_from_dict(
            {"family": "memory_transformer", "variant": "memtransformer", "vocab_size": 8000, "memory_size": 10}
        )
    ).eval()
    return LoadedModel("random-memtransformer-10", model, tokenizer)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", help="checkpoint folder; default: random weights, small config")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    torch.set_grad_enabled(False)

    loaded = load_checkpoint(args.checkpoint, "cpu") if args.checkpoint else random_model()
    model, c = loaded.model, loaded.config
    torch.manual_seed(1)
    lengths = torch.randint(12, 28, (args.batch,)).tolist()
    src_ids = pad_batch(
        [torch.randint(4, c.vocab_size, (n,)).tolist() + [c.eos_id] for n in lengths], c.pad_id
    )  # [b, n]
    tgt_in = pad_batch(
        [[c.bos_id] + torch.randint(4, c.vocab_size, (n,)).tolist() for n in lengths], c.pad_id
    )  # [b, t]

    captured = {}

    def traced():
        """What run_with_trace's recording pass does: every hook point, every call kept."""
        with recording(model, None, Interventions()) as (captures, _):
            model(src_ids, tgt_in)
        captured.update({name: call.tensor for name, capture in captures.items() for call in capture.calls})

    fast = median_seconds(lambda: model(src_ids, tgt_in), args.repeats)
    traced_time = median_seconds(traced, args.repeats)
    cached = median_seconds(
        lambda: greedy_decode(model, src_ids, max_new_tokens=40, stop_at_eos=False), max(3, args.repeats // 3)
    )
    uncached = median_seconds(
        lambda: greedy_decode(model, src_ids, max_new_tokens=40, use_cache=False, stop_at_eos=False),
        max(3, args.repeats // 3),
    )

    print(
        f"model {loaded.name} ({c.family}, d_model {c.d_model}, {c.n_encoder_layers}+{c.n_decoder_layers} layers, "
        f"memory {c.memory_size}), batch {args.batch}, source/target tokens {src_ids.shape[1]}/{tgt_in.shape[1]}, "
        f"threads {torch.get_num_threads()}"
    )
    print(f"hook points captured: {len(captured)} ({sum(t.numel() for t in captured.values()) * 4 / 2**20:.1f} MiB)")
    print(f"fast forward   {fast * 1e3:8.1f} ms")
    print(f"traced forward {traced_time * 1e3:8.1f} ms")
    print(f"traced / fast forward:              {traced_time / fast:5.2f}  (goal <= 1.3)")
    print(f"cached greedy, 40 tokens   {cached * 1e3:8.1f} ms")
    print(f"uncached greedy, 40 tokens {uncached * 1e3:8.1f} ms")
    print(f"uncached / cached greedy decoding:  {uncached / cached:5.2f}  (goal >= 3)")


if __name__ == "__main__":
    main()
