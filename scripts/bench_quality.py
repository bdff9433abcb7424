"""Quality at equal CPU time: hiersum's hierarchical recipe, its flat encoder and Hugging Face's BART side by side.

    python scripts/bench_quality.py --data ../shared/data/cnn-dailymail --minutes 60 --eval-examples 500
    python scripts/bench_quality.py --minutes 1 --eval-examples 50                  # a smoke run of the three
    python scripts/bench_quality.py --minutes 0.05 --override model=tiny ...        # any recipe option, for all

Three systems train one after another in this run, each for the same ``--minutes`` of CPU time, on the same
articles cut the same way, with the same tokenizer, and are scored by the same scorer on the same first
``--eval-examples`` articles of the validation split:

- ``hierarchical``: ``hiersum train experiment=cnndm_cpu`` (``--experiment``; ``model=small`` with copy attention),
  the recipe as it is but for its schedule (``optim=noam`` for all three: a budget of CPU time has no step count
  for the recipe's cosine decay to end at), in a child process, then ``hiersum evaluate`` of the network it ends
  with (the recipe's beam search, recorded in the checkpoint) in another.
- ``flat``: the same with ``model=flat_small`` (the paper's FT baseline: the selected paragraphs joined into one
  sequence of at most ``flat_max_tokens`` = 500 tokens, then EOS; the same decoder and copy attention).
  The recipe's BPE tokenizer is trained once on the train split and cached with the prepared corpus
  (:func:`hiersum.data.corpus_tokenizer.prepare_tokenizer`): the three read that one (checked: the two runs saved the
  same ``tokenizer.json``), and the articles it prepared once.
- ``bart``: what a user would pick instead: ``transformers.BartForConditionalGeneration`` built from a
  ``BartConfig`` of the same sizes as the recipe's model (width, heads, feed-forward, encoder layers = the
  hierarchical encoder's total, decoder layers; no pretrained weights), reading the flat system's source ids (so
  the same ~500 tokens of each article) and target ids, trained in this process by ``Seq2SeqTrainer``: AdamW with
  the recipe's betas, epsilon and weight decay, no gradient clipping (the recipe has none), HF's ``inverse_sqrt``
  schedule with the recipe's warm-up and the noam schedule's peak lr (the same curve), label smoothing as the
  recipe, ``data.max_batch_size`` (32) articles a step. It decodes with ``generate``: the recipe's beam, min and
  max length, ``no_repeat_ngram_size``, and its alpha as HF's ``length_penalty`` (HF divides by length^alpha,
  hiersum by the GNMT ((5 + length) / 6)^alpha).

The budget is CPU time: each training process stops at the first step after it has spent ``--minutes`` of CPU
time (all its threads, ``time.process_time``) since training began (``TrainingBudget``, a Lightning callback given
to ``hiersum train`` as ``+callbacks.training_budget``; ``BartBudget``, a ``TrainerCallback``), ``--threads`` torch
threads each. CPU time moves less than the wall clock with other tenants' load; both are reported. Validation is
off during training for the three (the recipe's validation every 400 steps would spend hiersum's budget on work
BART does not do); the tokenizer, the prepared corpus and decoding are outside the budget.

Scoring: :func:`hiersum.evaluation.scoring.score_split` (what ``hiersum evaluate`` scores with: ROUGE F1 against
the best reference, rouge-score with stemming), the three systems at once, with ``--bootstrap`` resamples for the
intervals and the paired tests of ``hierarchical`` against each other system.

Prints one JSON object (also written to ``OUT/bench_quality.json``): the command, date, machine and budget; a row
per system (``name``, ``train_minutes_cpu``, ``train_minutes_wall``, ``steps``, ``articles_seen``, ``R1``, ``R2``,
``RL``, ``Lsum``, ``eval_examples``, ``cpu_minutes_total``: the system's whole CPU time, preparation and decoding
included; ``run_dir`` and ``predictions``: its files); ``significance``; the hiersum commands run. ``OUT`` keeps
each system's run: logs (``OUT/logs``), checkpoint or model, predictions. BART needs ``accelerate``
(``Seq2SeqTrainer``): ``pip install 'hiersum[bench]'``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib.util
import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import pytorch_lightning as pl
import torch
from transformers import TrainerCallback

import hiersum
from hiersum.config import BootstrapConfig, DataConfig, DecodeConfig, ModelConfig, OptimConfig, TokenizerConfig
from hiersum.data.batching import FlatLayout, SourceLayout, collate, flat_layout
from hiersum.data.corpus_splits import CorpusSplits
from hiersum.data.corpus_tokenizer import prepare_tokenizer
from hiersum.data.schema import IGNORE_INDEX, EncodedExample, Example
from hiersum.data.tokenizer import SubwordTokenizer
from hiersum.evaluation.machine import machine_description
from hiersum.evaluation.metrics import ROUGE_TYPES
from hiersum.evaluation.scoring import ScoringConfig, score_split
from hiersum.model.encoder_registry import run_tokenizer_config
from hiersum.training.schedule import NoamSchedule

ROOT = Path(__file__).resolve().parents[1]
CNNDM = ROOT.parent / "shared" / "data" / "cnn-dailymail"
SYSTEMS = ("hierarchical", "flat", "bart")
FLAT_OVERRIDES = ("model=flat_small",)
"""What turns the recipe into the flat system (the recipe's copy attention and dropout stay)."""
ROUGE_COLUMNS = dict(zip(ROUGE_TYPES, ("R1", "R2", "RL", "Lsum"), strict=True))
"""The table's column of each ROUGE figure of :func:`score_split`."""


@dataclass
class BudgetClock:
    """The CPU time of this process since training began, against a budget of ``cpu_seconds``."""

    cpu_seconds: float
    cpu_start: float = 0.0
    wall_start: float = 0.0

    def start(self) -> None:
        self.cpu_start, self.wall_start = time.process_time(), time.perf_counter()

    def spent(self) -> bool:
        return time.process_time() - self.cpu_start >= self.cpu_seconds

    def minutes(self) -> dict[str, float]:
        """``train_minutes_cpu`` and ``train_minutes_wall`` since :meth:`start`."""
        return {"train_minutes_cpu": round((time.process_time() - self.cpu_start) / 60, 3),
                "train_minutes_wall": round((time.perf_counter() - self.wall_start) / 60, 3)}


class TrainingBudget(pl.Callback):
    """``hiersum train``'s side of the budget, instantiated in its process from ``+callbacks.training_budget``:
    stops the fit at the first step after ``cpu_seconds`` of CPU time, then saves the network as it is
    (``checkpoint``, a Lightning checkpoint ``hiersum evaluate`` reads) and what the training did (``record``:
    JSON of the minutes, steps and articles seen)."""

    def __init__(self, cpu_seconds: float, checkpoint: str, record: str) -> None:
        self.clock = BudgetClock(cpu_seconds)
        self.checkpoint, self.record = checkpoint, record
        self.articles = 0

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.clock.start()

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        self.articles += len(batch.ids)
        if self.clock.spent():
            trainer.should_stop = True

    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        done = {**self.clock.minutes(), "steps": trainer.global_step, "articles_seen": self.articles}
        trainer.save_checkpoint(self.checkpoint)
        Path(self.record).write_text(json.dumps(done), encoding="utf-8")


class BartBudget(TrainerCallback):
    """``Seq2SeqTrainer``'s side of the budget (HF has no time limit): stops training at the first step after
    ``cpu_seconds`` of CPU time."""

    def __init__(self, cpu_seconds: float) -> None:
        self.clock = BudgetClock(cpu_seconds)

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.clock.start()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.clock.spent():
            control.should_training_stop = True


@dataclass
class Recipe:
    """The recipe's settings the BART system follows (the flat system's composed ``hiersum train`` config)."""

    data: DataConfig
    model: ModelConfig
    decode: DecodeConfig
    optim: OptimConfig
    tokenizer: TokenizerConfig
    seed: int


BUDGET_SCHEDULE = ("optim=noam",)
"""The schedule of every system: a run bounded by CPU time has no last step for a decay to zero (the recipe's
``optim=cosine``) to aim at; noam's inverse square root needs none, and BART's ``inverse_sqrt`` follows it."""


def composed_recipe(overrides: Sequence[str]) -> Recipe:
    """``hiersum train``'s config composed with ``overrides`` (as its command line would give them)."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from hiersum.cli.common import CONFIG_DIR
    from hiersum.cli.config_store import register_configs
    from hiersum.commands.composed import typed_config

    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        cfg = compose("train", overrides=list(overrides))
    return Recipe(*(typed_config(cfg[name]) for name in ("data", "model", "decode", "optim", "tokenizer")),
                  seed=cfg.seed)


@dataclass
class Run:
    """Where this run keeps its files, and what every system shares."""

    out: Path
    data: Path
    minutes: float
    eval_examples: int
    threads: int
    experiment: str
    overrides: list[str]
    commands: dict[str, str] = field(default_factory=dict)

    def recipe_overrides(self) -> list[str]:
        return [f"experiment={self.experiment}", f"data.path={self.data}", *BUDGET_SCHEDULE, *self.overrides]


def run_child(run: Run, name: str, arguments: list[str]) -> float:
    """``python -m hiersum ARGUMENTS`` (this checkout's, ``scripts/`` importable for ``TrainingBudget``) with
    ``run.threads`` threads, its output in ``OUT/logs/NAME.log``; its CPU seconds. A failure ends the run with the
    log's tail."""
    log = run.out / "logs" / f"{name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    paths = [str(Path(hiersum.__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]
    env = {**os.environ, "OMP_NUM_THREADS": str(run.threads),
           "PYTHONPATH": os.pathsep.join(filter(None, [*paths, os.environ.get("PYTHONPATH")]))}
    run.commands[name] = shlex.join(["hiersum", *arguments])
    print(f"bench_quality: {run.commands[name]}", file=sys.stderr, flush=True)
    with open(log, "wb") as output:
        process = subprocess.Popen([sys.executable, "-m", "hiersum", *arguments], stdout=output,
                                   stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        tail = log.read_text(encoding="utf-8", errors="replace")[-3000:]
        raise SystemExit(f"bench_quality: {run.commands[name]} failed (log {log}):\n{tail}")
    return usage.ru_utime + usage.ru_stime


def train_and_decode_hiersum(run: Run, name: str, system_overrides: Sequence[str]) -> tuple[dict, Path]:
    """``hiersum train`` of the recipe with ``system_overrides`` for the budget, then ``hiersum evaluate`` of its
    network on the validation split's first articles: the training record (with ``cpu_minutes_total``) and the
    predictions file."""
    run_dir, evaluated = run.out / name, run.out / f"{name}-evaluate"
    checkpoint, record = run_dir / "budget_end.ckpt", run_dir / "training_budget.json"
    cpu = run_child(run, f"{name}-train", [
        "train", *run.recipe_overrides(), *system_overrides,
        "trainer.max_steps=-1", "trainer.max_epochs=-1", "trainer.max_time=null",
        "trainer.limit_val_batches=0", "trainer.num_sanity_val_steps=0", "eval_split=null",
        "checkpoint_every_n_steps=null",
        "+callbacks.training_budget._target_=bench_quality.TrainingBudget",
        f"+callbacks.training_budget.cpu_seconds={run.minutes * 60}",
        f"+callbacks.training_budget.checkpoint={checkpoint}", f"+callbacks.training_budget.record={record}",
        f"hydra.run.dir={run_dir}",
    ])
    cpu += run_child(run, f"{name}-evaluate", [
        "evaluate", f"checkpoint={checkpoint}", f"data.path={run.data}", "split=validation",
        f"data.limit_eval_examples={run.eval_examples}", "baselines=[]", "bootstrap.samples=0",
        f"hydra.run.dir={evaluated}",
    ])
    done, predictions = json.loads(record.read_text(encoding="utf-8")), evaluated / "predictions.jsonl"
    return {**done, "cpu_minutes_total": round(cpu / 60, 3), "run_dir": str(run_dir),
            "predictions": str(predictions)}, predictions


def bart_config(model: ModelConfig, tokenizer: SubwordTokenizer, max_positions: int) -> Any:
    """A ``BartConfig`` of ``model``'s sizes (its encoder layers all in BART's encoder), no dropout beyond the
    recipe's, the tokenizer's special ids, decoding starting from BOS as hiersum's does."""
    from transformers import BartConfig

    special = tokenizer.special
    return BartConfig(
        vocab_size=tokenizer.vocab_size, d_model=model.d_model, encoder_layers=model.encoder_layers,
        decoder_layers=model.decoder_layers, encoder_attention_heads=model.heads, decoder_attention_heads=model.heads,
        encoder_ffn_dim=model.ff_size, decoder_ffn_dim=model.ff_size, max_position_embeddings=max_positions,
        dropout=model.dropout, attention_dropout=0.0, activation_dropout=0.0, pad_token_id=special.pad,
        bos_token_id=special.bos, eos_token_id=special.eos, decoder_start_token_id=special.bos,
        forced_bos_token_id=None, forced_eos_token_id=None,
    )


def bart_batch(examples: Sequence[EncodedExample], *, tokenizer: SubwordTokenizer, layout: FlatLayout
               ) -> dict[str, torch.Tensor]:
    """BART's inputs of ``examples``: hiersum's flat batch (source [B, L], teacher-forced target [B, S] from BOS,
    labels [B, S] ending with EOS, padding ``IGNORE_INDEX``)."""
    special = tokenizer.special
    batch = collate(examples, pad_id=special.pad, bos_id=special.bos, eos_id=special.eos, flat=layout)
    return {"input_ids": batch.src, "attention_mask": batch.src_mask, "decoder_input_ids": batch.tgt_in,
            "labels": batch.tgt_out.masked_fill(~batch.tgt_mask, IGNORE_INDEX)}


def articles_seen(steps: int, articles: int, batch_size: int) -> int:
    """Articles a loader of ``articles`` in batches of ``batch_size`` (the last one smaller) gives in ``steps``."""
    per_epoch = -(-articles // batch_size)
    epochs, rest = divmod(steps, per_epoch)
    return epochs * articles + min(rest * batch_size, articles)


def train_bart(run: Run, recipe: Recipe, tokenizer: SubwordTokenizer, train: Sequence[EncodedExample],
               layout: FlatLayout) -> tuple[Any, dict]:
    """BART trained by ``Seq2SeqTrainer`` for the budget: the model and the training record."""
    from transformers import BartForConditionalGeneration, Seq2SeqTrainer, Seq2SeqTrainingArguments

    optimizer, scheduler = recipe.optim.optimizer, recipe.optim.scheduler or {}
    if not str(scheduler.get("_target_", "")).endswith("noam_scheduler"):
        raise SystemExit(f"bench_quality: bart follows the recipe's noam schedule; optim.scheduler is {scheduler}")
    warmup = int(scheduler["warmup_steps"])
    noam = NoamSchedule(lr=scheduler["lr"], d_model=scheduler.get("d_model") or recipe.model.d_model,
                        warmup_steps=warmup)
    max_positions = -(-max(layout.max_tokens + 1, recipe.data.max_target_tokens + 1,
                           recipe.decode.max_length + 1) // 64) * 64
    torch.manual_seed(recipe.seed)
    model = BartForConditionalGeneration(bart_config(recipe.model, tokenizer, max_positions))
    betas = optimizer.get("betas", (0.9, 0.999))
    arguments = Seq2SeqTrainingArguments(
        output_dir=str(run.out / "bart"), per_device_train_batch_size=recipe.data.max_batch_size,
        learning_rate=float(optimizer.get("lr", 1.0)) * noam.factor(warmup), lr_scheduler_type="inverse_sqrt",
        warmup_steps=warmup, adam_beta1=betas[0], adam_beta2=betas[1], adam_epsilon=optimizer.get("eps", 1e-8),
        weight_decay=optimizer.get("weight_decay", 0.0), max_grad_norm=0.0,
        label_smoothing_factor=recipe.optim.label_smoothing, max_steps=10**9, save_strategy="no",
        eval_strategy="no", logging_steps=50, report_to="none", disable_tqdm=True, use_cpu=True,
        remove_unused_columns=False, dataloader_num_workers=0, seed=recipe.seed,
    )
    budget = BartBudget(run.minutes * 60)
    trainer = Seq2SeqTrainer(model=model, args=arguments, train_dataset=train, callbacks=[budget],
                             data_collator=partial(bart_batch, tokenizer=tokenizer, layout=layout))
    with contextlib.redirect_stdout(sys.stderr):  # the Trainer prints its logs; stdout is the JSON
        trainer.train()
    steps = trainer.state.global_step
    return model, {**budget.clock.minutes(), "steps": steps,
                   "articles_seen": articles_seen(steps, len(train), recipe.data.max_batch_size)}


@torch.inference_mode()
def bart_summaries(model: Any, encoded: Sequence[EncodedExample], tokenizer: SubwordTokenizer, layout: FlatLayout,
                   decode: DecodeConfig) -> list[str]:
    """BART's summary of each of ``encoded`` (``generate`` with the recipe's search settings, padding and BOS never
    generated, as in hiersum's search), as hiersum turns ids into text."""
    from transformers import GenerationConfig

    special = tokenizer.special
    search = GenerationConfig(
        num_beams=decode.beam_size, min_new_tokens=decode.min_length, max_new_tokens=decode.max_length,
        no_repeat_ngram_size=decode.no_repeat_ngram_size, length_penalty=decode.alpha, early_stopping=True,
        decoder_start_token_id=special.bos, bos_token_id=special.bos, eos_token_id=special.eos,
        pad_token_id=special.pad, suppress_tokens=[special.pad, special.bos])  # hiersum's search never emits them
    model.eval()
    summaries = []
    for start in range(0, len(encoded), decode.batch_size):
        batch = bart_batch(encoded[start: start + decode.batch_size], tokenizer=tokenizer, layout=layout)
        ids = model.generate(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                             generation_config=search)  # [B, 1 + summary length], from the decoder's BOS
        summaries += [tokenizer.decode(row[1:].tolist()) for row in ids]
    return summaries


def bart_system(run: Run) -> tuple[dict, list[Example], list[str]]:
    """The BART system on the flat system's data: its training record, the validation examples scored (the
    first ``run.eval_examples``, every system's) and its summaries of them (also in ``OUT/bart/predictions.jsonl``,
    beside the model: ``OUT/bart/model``)."""
    cpu_start = time.process_time()
    recipe = composed_recipe([*run.recipe_overrides(), *FLAT_OVERRIDES])
    tokenizer = prepare_tokenizer(run_tokenizer_config(recipe.tokenizer, recipe.model), recipe.data)
    splits = CorpusSplits(replace(recipe.data, limit_eval_examples=run.eval_examples), tokenizer, recipe.model)
    layout = flat_layout(SourceLayout.FLAT, recipe.model, tokenizer)
    assert layout is not None  # a flat layout, asked for
    model, done = train_bart(run, recipe, tokenizer, splits.load("train"), layout)
    examples, encoded = splits.evaluation_split("validation")
    summaries = bart_summaries(model, encoded, tokenizer, layout, recipe.decode)
    done["cpu_minutes_total"] = round((time.process_time() - cpu_start) / 60, 3)
    model.save_pretrained(run.out / "bart" / "model")
    lines = [{"id": example.id, "summary": summary, "reference": example.references[0]}
             for example, summary in zip(examples, summaries, strict=True)]
    predictions = run.out / "bart" / "predictions.jsonl"
    predictions.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    done.update(run_dir=str(run.out / "bart"), predictions=str(predictions))
    return done, examples, summaries


def scored_rows(examples: list[Example], outputs: dict[str, list[str]], records: dict[str, dict],
                bootstrap: int) -> tuple[list[dict], dict]:
    """A row per system (its record and ROUGE F1: :data:`ROUGE_COLUMNS`, with their intervals), and the paired
    tests of ``hierarchical`` against each other system."""
    pairs = [(SYSTEMS[0], name) for name in SYSTEMS[1:]]
    scored = score_split(examples, outputs, ScoringConfig(baselines=[], bootstrap=BootstrapConfig(samples=bootstrap)),
                         compare=pairs if bootstrap else ())
    rows = []
    for name in SYSTEMS:
        figures = scored.systems[name]
        rows.append({"name": name, **records[name], "eval_examples": len(examples),
                     **{column: round(figures[key], 2) for key, column in ROUGE_COLUMNS.items()},
                     **({"ci": {ROUGE_COLUMNS[key]: [round(v, 2) for v in figures["ci"][key]] for key in ROUGE_COLUMNS}}
                        if bootstrap else {})})
    significance = {pair: {ROUGE_COLUMNS[key]: tests[key] for key in ROUGE_COLUMNS}
                    for pair, tests in scored.comparisons.items()}
    return rows, significance


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=CNNDM, help="the corpus folder (train and validation splits)")
    parser.add_argument("--minutes", type=float, default=60.0, help="CPU minutes of training per system")
    parser.add_argument("--eval-examples", type=int, default=500, help="the first N validation articles scored")
    parser.add_argument("--out", type=Path, default=None,
                        help="folder of the runs (default: outputs/bench_quality/<date and time>)")
    parser.add_argument("--experiment", default="cnndm_cpu", help="the recipe: hiersum train experiment=...")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                        help="a hiersum train option for every system (BART follows model.*, data.*, decode.*)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads of each system")
    parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples (0: no intervals, no tests)")
    args = parser.parse_args(argv)
    if args.minutes <= 0 or args.eval_examples < 1 or args.threads < 1:
        parser.error("--minutes must be > 0, --eval-examples and --threads >= 1")
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    if importlib.util.find_spec("accelerate") is None:
        raise SystemExit("bench_quality: the bart system trains with transformers' Seq2SeqTrainer, which needs "
                         "accelerate: pip install 'hiersum[bench]'")
    started = datetime.datetime.now().astimezone()
    out = (args.out or ROOT / "outputs" / "bench_quality" / started.strftime("%Y-%m-%d_%H-%M-%S")).resolve()
    run = Run(out=out, data=args.data.resolve(), minutes=args.minutes, eval_examples=args.eval_examples,
              threads=args.threads, experiment=args.experiment, overrides=args.override)
    torch.set_num_threads(args.threads)
    records, predictions = {}, {}
    for name, overrides in (("hierarchical", []), ("flat", FLAT_OVERRIDES)):
        records[name], predictions[name] = train_and_decode_hiersum(run, name, overrides)
    saved = {(out / name / "tokenizer" / "tokenizer.json").read_bytes() for name in predictions}
    if len(saved) != 1:
        raise SystemExit(f"bench_quality: the hierarchical and flat runs in {out} trained different tokenizers")
    records["bart"], examples, bart_outputs = bart_system(run)
    from hiersum.commands.evaluate import match_predictions, read_predictions

    outputs = {name: match_predictions(read_predictions(path), examples, source=str(path))
               for name, path in predictions.items()}
    rows, significance = scored_rows(examples, {**outputs, "bart": bart_outputs}, records, args.bootstrap)
    report = {
        "command": shlex.join(["python", "scripts/bench_quality.py", *(sys.argv[1:] if argv is None else argv)]),
        "date": started.isoformat(timespec="seconds"), "machine": machine_description(),
        "budget": f"{args.minutes} CPU minutes of training per system (its process, all threads), "
                  f"{args.threads} torch threads, validation off",
        "data": str(run.data), "experiment": args.experiment, "overrides": args.override,
        "eval_split": "validation", "systems": rows, "significance": significance, "commands": run.commands,
        "out": str(out),
    }
    (out / "bench_quality.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    print(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
