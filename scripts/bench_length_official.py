"""The official code's cases of ``scripts/bench_length.py --models official``: one case (part, paragraphs) of the
official hiersumm model (nlpyang/hiersumm, Liu & Lapata 2019) through the peer harness
(``../shared/peers/hiersumm/harness.py``), printing one JSON line.

bench_length.py runs this file with the peer's Python (by default bench_length.py's own: torch and numpy are all it
needs), one process per case, and passes hiersum's ``model=small`` sizes
(``--d-model`` ...) so that the two models match; it imports only the standard library, torch and the harness,
which extracts the official code from its git mirror (``HIERSUMM_MIRROR``) and imports it from there. No
official code is in this repository.

``--check``: import the harness and the official modules, print the peer's torch version and the official commit
(bench_length.py runs it once before the cases). ``--case summarize:P`` / ``--case train:P``: the official
``Summarizer`` in hierarchical mode with random weights (the harness's seeded xavier init), dropout 0, on one
example of P paragraphs of ``--tokens`` real tokens (``H.make_batch``, ids 9..vocab-1, pad 6).

- summarize: ``H.bench_decode``, the official ``Translator._fast_translate_batch`` (encoder included) at
  ``--beam`` with its EOS id set to -1, so that it decodes exactly ``--steps`` steps (checked), GNMT length
  penalty ``--alpha`` (hiersum's default 0.6; the forced length makes it irrelevant to the cost);
- train: ``H.bench_train``, the official ``Trainer._gradient_accumulation``: forward, the sharded
  label-smoothed (0.1) loss of a ``--target``-token summary (``tgt`` of target + 1 tokens, BOS first), backward
  and the official Adam/noam step.

One warm-up call, then ``--repeats`` timed ones: ``seconds`` their median, ``peak_memory_mb`` the process's
maxrss read after them, ``gflop`` one more call under ``torch.utils.flop_counter.FlopCounterMode`` (null where it
does not work). A paragraph count past the official encoder's position table (5,000 entries, also used for the
paragraph positions) records ``limit``: the error's first line.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import sys
from pathlib import Path

import torch


def harness(peer_dir: str):
    """The peer harness module (``harness.py`` of ``peer_dir``)."""
    sys.path.insert(0, str(Path(peer_dir).resolve()))
    import harness as H

    return H


def official_args(H, args: argparse.Namespace) -> argparse.Namespace:
    """The official argument namespace (its own argparse block) with hiersum's ``model=small`` sizes."""
    return H.make_args("small", hier=True, emb_size=args.d_model, enc_hidden_size=args.d_model,
                       dec_hidden_size=args.d_model, ff_size=args.ff_size, heads=args.heads,
                       enc_layers=args.encoder_layers, inter_layers=args.inter_layers, inter_heads=args.inter_heads,
                       dec_layers=args.decoder_layers, enc_dropout=0.0, dec_dropout=0.0, label_smoothing=0.1,
                       beam_size=args.beam, alpha=args.alpha, max_length=args.steps, min_length=0)


def count_gflop(call) -> float | None:
    """The GFLOPs of ``call()`` (matrix products and attention, forward and backward), None where the counter
    does not work."""
    try:
        from torch.utils.flop_counter import FlopCounterMode

        with FlopCounterMode(display=False) as counter:
            call()
        return float(f"{counter.get_total_flops() / 1e9:.5g}")
    except Exception as error:  # any failure of the counter: no figure
        print(f"[bench_length_official] no FLOP count: {error}", file=sys.stderr)
        return None


def run_case(args: argparse.Namespace, part: str, paragraphs: int) -> dict:
    if args.threads:
        torch.set_num_threads(args.threads)
    H = harness(args.peer_dir)
    hargs = official_args(H, args)
    symbols = dict(H.OFFICIAL_SYMBOLS)
    model = H.build_model(hargs, args.vocab, symbols["PAD"], seed=0)
    batch = H.make_batch(1, paragraphs, args.tokens, args.target + 1, args.vocab, hier=True, seed=1,
                         pad_id=symbols["PAD"], bos_id=symbols["BOS"], eos_id=symbols["EOS"])
    table = model.encoder.pos_emb.pe.size(1)
    try:
        if part == "summarize":
            result = H.bench_decode(hargs, model, batch, symbols, beam_size=args.beam, max_length=args.steps,
                                    min_length=0, alpha=args.alpha, warmup=1, runs=args.repeats,
                                    force_full_length=True)
            if result["decoder_steps"] != args.steps:
                raise RuntimeError(f"the official beam search ran {result['decoder_steps']} steps, not {args.steps}")
            seconds = result["run_s_median"]
            no_eos = dict(symbols, EOS=-1)

            def call() -> None:
                H.run_beam(hargs, model, batch, no_eos, args.steps, 0)
        else:
            model.train()
            seconds = H.bench_train(hargs, model, batch, args.vocab, symbols, warmup=1,
                                    steps=args.repeats)["step_s_median"]

            def call() -> None:
                H.bench_train(hargs, model, batch, args.vocab, symbols, warmup=0, steps=1)
    except RuntimeError as error:
        if paragraphs > table:
            first = (str(error).strip().splitlines() or [type(error).__name__])[0]
            return {"limit": f"the official encoder's position table has {table} entries (token and paragraph "
                             f"positions), found {paragraphs} paragraphs: {first}"}
        raise
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return {"seconds": round(seconds, 4), "peak_memory_mb": round(peak_mb, 1), "gflop": count_gflop(call)}


def check(args: argparse.Namespace) -> dict:
    """Import the harness and the official modules (extracting the source from the mirror if needed)."""
    H = harness(args.peer_dir)
    H.official()
    return {"torch": torch.__version__, "python_version": sys.version.split()[0],
            "official_commit": H.official_commit()}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peer-dir", required=True, help="the folder of the peer's harness.py")
    parser.add_argument("--check", action="store_true", help="import the official code, print versions")
    parser.add_argument("--case", help="part:paragraphs (summarize or train)")
    parser.add_argument("--tokens", type=int, default=100)
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument("--alpha", type=float, default=0.6)
    parser.add_argument("--target", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--d-model", type=int, default=128)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--ff-size", type=int, default=256)
    parser.add_argument("--encoder-layers", type=int, default=4)
    parser.add_argument("--inter-layers", default="2,3", help="comma-separated 0-based indices")
    parser.add_argument("--inter-heads", type=int, default=4)
    parser.add_argument("--decoder-layers", type=int, default=2)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    with contextlib.redirect_stdout(sys.stderr):  # the official code prints; stdout keeps the one JSON line
        if args.check:
            result = check(args)
        else:
            part, paragraphs = args.case.split(":")
            result = run_case(args, part, int(paragraphs))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
