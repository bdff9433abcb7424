"""One long record summarized end to end: ``hiersum summarize`` and the Python call
(``hiersum.inference.load_summarizer(...).summarize``) on a record of P paragraphs of T tokens (10,000 x 100 = one
million source tokens by default), each in its own process, timed from start to exit with its peak memory.

    python scripts/bench_long_record.py                                   # a checkpoint trained here first
    python scripts/bench_long_record.py --checkpoint outputs/train/<run>/checkpoints/best.ckpt
    python scripts/bench_long_record.py --paragraphs 1000 --tokens 100    # 100,000 tokens

Prints one JSON object. Without ``--checkpoint`` the script first trains one on the sample corpus
(``hiersum train model=small debug=fast_dev_run``: random-like weights, but the real network, tokenizer and front
ends; the time of the summary does not depend on what the weights say, as it is forced to ``--steps`` tokens).
The record is one JSON line whose ``documents`` are P paragraphs of the sample corpus's text, each long enough to
be cut at T tokens by ``max_paragraph_tokens``; ``max_paragraphs=P`` keeps them all. The search is the checkpoint's
recorded one, but with beam ``--beam`` and exactly ``--steps`` tokens (``decode.min_length = decode.max_length``), as
``scripts/bench_length.py`` summarizes. ``seconds``: wall time of the whole process (start-up, loading, reading
and tokenizing the record, selection, encoding, search, writing); ``cpu_seconds``: the CPU time of its threads
(which another load on the machine moves less than the wall time); ``peak_memory_mb``: its maximum resident set
(``ru_maxrss``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PYTHON_CALL = """
import json, sys
from hiersum.inference import load_summarizer
checkpoint, record, paragraphs, tokens, beam, steps, output = sys.argv[1:]
summarizer = load_summarizer(checkpoint)
with open(record) as lines:
    record = json.loads(lines.readline())
[line] = summarizer.summarize(record, max_paragraphs=int(paragraphs), max_paragraph_tokens=int(tokens),
                              beam_size=int(beam), min_length=int(steps), max_length=int(steps))
with open(output, "w") as out:
    out.write(json.dumps(line) + "\\n")
"""


def train_checkpoint(workdir: Path, model: str, *overrides: str) -> Path:
    """A checkpoint of ``model=<model>`` from one fast_dev_run step on the sample corpus (``overrides``: more
    options of ``hiersum train``, e.g. ``trainer=gpu``)."""
    run_dir = workdir / "train"
    subprocess.run([sys.executable, "-m", "hiersum.cli.main", "train", f"model={model}", "debug=fast_dev_run",
                    "eval_split=null", *overrides, f"hydra.run.dir={run_dir}"], check=True, cwd=ROOT,
                   capture_output=True)
    [checkpoint] = sorted(run_dir.glob("**/last.ckpt"))
    return checkpoint


def sample_text() -> list[str]:
    """The sentences of the sample corpus's training documents (made by ``hiersum make-sample`` when absent)."""
    from hiersum.data.sample_location import sample_dir

    sentences = []
    with open(Path(sample_dir(ROOT / "data")) / "train.jsonl") as lines:
        for line in lines:
            record = json.loads(line)
            for document in record["documents"]:
                sentences.extend(part.strip() + "." for part in document.split(".") if part.strip())
    return sentences


def write_record(path: Path, paragraphs: int, words: int) -> None:
    """One record of ``paragraphs`` paragraphs of ``words`` words each (sample sentences, in turn)."""
    sentences = sample_text()
    words_of = iter(word for _ in range(10**9) for sentence in sentences for word in sentence.split())
    documents = [" ".join(next(words_of) for _ in range(words)) for _ in range(paragraphs)]
    path.write_text(json.dumps({"id": "long", "documents": documents}) + "\n")


def measure(command: list[str]) -> dict:
    """Wall seconds, CPU seconds (user + system, all threads) and peak resident memory of ``command``, run to its
    end."""
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    stderr = process.stderr.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command[:4])} ... failed: {stderr.strip().splitlines()[-1:]}")
    return {"seconds": round(seconds, 2), "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 2),
            "peak_memory_mb": round(usage.ru_maxrss / 1024, 1)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", type=Path, help="default: one trained here (fast_dev_run, --model)")
    parser.add_argument("--model", default="small", help="the model preset of the checkpoint trained here")
    parser.add_argument("--paragraphs", type=int, default=10000)
    parser.add_argument("--tokens", type=int, default=100, help="tokens per paragraph (max_paragraph_tokens)")
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--steps", type=int, default=80, help="summary tokens (min_length = max_length)")
    parser.add_argument("--fronts", nargs="+", choices=("cli", "python"), default=["cli", "python"])
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        checkpoint = args.checkpoint.resolve() if args.checkpoint else train_checkpoint(workdir, args.model)
        record = workdir / "record.jsonl"
        write_record(record, args.paragraphs, words=2 * args.tokens)  # cut at --tokens by max_paragraph_tokens
        trained = f"trained here (fast_dev_run, model={args.model})"
        results = {"checkpoint": str(checkpoint) if args.checkpoint else trained,
                   "paragraphs": args.paragraphs, "tokens": args.tokens,
                   "source_tokens": args.paragraphs * args.tokens, "beam": args.beam, "steps": args.steps}
        commands = {
            "cli": [sys.executable, "-m", "hiersum.cli.main", "summarize", f"checkpoint={checkpoint}",
                    f"input={record}", f"output={workdir / 'cli.jsonl'}", f"max_paragraphs={args.paragraphs}",
                    f"max_paragraph_tokens={args.tokens}", f"decode.beam_size={args.beam}",
                    f"decode.min_length={args.steps}", f"decode.max_length={args.steps}",
                    f"hydra.run.dir={workdir / 'summarize'}"],
            "python": [sys.executable, "-c", PYTHON_CALL, str(checkpoint), str(record), str(args.paragraphs),
                       str(args.tokens), str(args.beam), str(args.steps), str(workdir / "python.jsonl")],
        }
        for front in args.fronts:
            results[front] = measure(commands[front])
            [line] = (workdir / f"{front}.jsonl").read_text().splitlines()
            results[front]["summary_tokens_requested"] = args.steps
            results[front]["summary_words"] = len(json.loads(line)["summary"].split())
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
