"""``hiersum rank``: rank the paragraphs of raw multi-document records, resumably (:func:`rank`).

The preprocessing of Liu & Lapata (2019), whose official code was never released: raw multi-document
input -> the top-L paragraphs of each record, in rank order, as the summarizer's input.

Input: as ``hiersum summarize`` (native JSONL, Multi-News JSONL, ``.txt`` files or a folder, ``-``).
Ranker: a checkpoint of ``hiersum train-ranker``, or ``tfidf`` (tf-idf similarity to the title or to the
record's centroid; :class:`hiersum.data.selection.TfidfScorer`).

Output: one native-JSONL record per valid input record, in input order: ``id``, ``title`` (null when
none), ``summary`` (when the input has references: a string, or a list when several), ``documents`` =
``[[top-L paragraphs in rank order]]`` (one document, pre-split), and ``ranking`` = ``[{document,
paragraph, score}, ...]`` giving each kept paragraph's place in the input (0-based) and its score.
Resume (with the output's provenance), ``overwrite``, ``strict``, malformed records, the errors file, a
stopped run, the output's lock and the shards (``shard=I/N``, ``devices=N``: :mod:`hiersum.commands.shards`)
behave as in :mod:`hiersum.commands.summarize`; the machinery both use is
:class:`hiersum.inference.resumable_output.ResumableOutput`.
"""

from __future__ import annotations

import sys
from typing import Any

from omegaconf import DictConfig

from hiersum.checkpoints.ranker import RankerScorer, load_ranker
from hiersum.commands.common import rerun_command
from hiersum.commands.composed import command_config
from hiersum.commands.shards import Shard, run_on_devices, shard_target
from hiersum.config import RankConfig
from hiersum.data.output_lock import output_lock
from hiersum.data.schema import Example
from hiersum.data.selection import ParagraphScorer, TfidfScorer, ranked_order
from hiersum.inference.pipeline import checked_device
from hiersum.inference.resumable_output import OutputResult, Provenance, ResumableOutput, refuse_output_over_inputs

TFIDF = "tfidf"
"""``ranker=tfidf``: rank by tf-idf similarity, no checkpoint."""
USAGE = "hiersum rank ranker=CKPT|tfidf input=IN output=OUT top_k=L"


RankResult = OutputResult
"""What :func:`rank` returns (``written``, ``already_done``, ``errors``), the result of ``hiersum summarize`` too."""


def ranked_record(example: Example, scores: list[float], top_k: int) -> dict[str, Any]:
    """The output record of ``example`` given its paragraph scores (document order): see the module docstring."""
    positions = [(d, p) for d, document in enumerate(example.documents) for p in range(len(document))]
    score_of = dict(zip(positions, scores, strict=True))
    kept = ranked_order(example.documents, scores)[:top_k]
    record: dict[str, Any] = {"id": example.id, "title": example.title}
    if example.references:
        record["summary"] = example.references[0] if len(example.references) == 1 else list(example.references)
    record["documents"] = [[example.documents[d][p] for d, p in kept]]
    record["ranking"] = [{"document": d, "paragraph": p, "score": score_of[(d, p)]} for d, p in kept]
    return record


def load_scorer(ranker: str, *, device: str, batch_examples: int) -> ParagraphScorer:
    """``tfidf`` or a ranker checkpoint as a scorer; a missing or wrong file is a :class:`UsageError`."""
    if ranker == TFIDF:
        return TfidfScorer()
    checked_device(device)
    loaded = load_ranker(ranker)  # a file that is no ranker checkpoint: its CheckpointError (one line)
    return RankerScorer(loaded.network, loaded.tokenizer, batch_examples=batch_examples, device=device)


def rank(cfg: RankConfig | DictConfig) -> RankResult:
    """Rank ``cfg.input`` into ``cfg.output`` (see the module docstring); ``cfg``: the typed config, or the
    composed Hydra config it is converted from."""
    cfg = command_config(cfg, RankConfig, usage=USAGE)
    ranker_file = None if cfg.ranker == TFIDF else cfg.ranker
    refuse_output_over_inputs(cfg.output, {"input": cfg.input, "ranker": ranker_file})
    if cfg.devices > 1:
        merged = run_on_devices(cfg, rank, "rank")
        print(f"merged the {cfg.devices} shards ({merged} ranked records) into {cfg.output}", file=sys.stderr)
        return RankResult(written=merged, already_done=0, errors=0)
    shard, output = shard_target(cfg)
    with output_lock(output):  # one writer: a second process on this output is refused here
        return _rank_into(cfg, output, shard, ranker_file)


def _rank_into(cfg: RankConfig, output: str, shard: Shard | None, ranker_file: str | None) -> RankResult:
    """:func:`rank` of one process into ``output`` (the output, or the file of ``shard``), whose lock it holds."""
    scorer = load_scorer(cfg.ranker, device=cfg.device, batch_examples=cfg.batch_examples)
    options = {"input_format": cfg.input_format, "top_k": cfg.top_k, "ranker": cfg.ranker,
               **cfg.input_layout(given_only=True), **({"shard": str(shard)} if shard else {})}
    provenance = Provenance.of("rank", model=ranker_file, source=cfg.input, options=options)
    out = ResumableOutput(output, provenance, noun="ranked records", rerun=rerun_command("rank"))
    pending = out.start(cfg.input, input_format=cfg.input_format, resume=cfg.resume and not cfg.overwrite,
                        strict=cfg.strict, keeps=shard.keeps if shard else None, layout=cfg.input_layout())
    with out.writing(memory_hint=f"lower batch_examples (now {cfg.batch_examples})", description="ranking") as lines:
        for start in range(0, len(pending), cfg.batch_examples):
            chunk = pending[start : start + cfg.batch_examples]
            for example, scores in zip(chunk, scorer.score(chunk), strict=True):
                lines.write(ranked_record(example, scores, cfg.top_k))
            lines.sync()
            lines.advance(len(chunk))
    return out.finish()
