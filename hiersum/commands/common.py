"""What several commands share: loading a checkpoint or checking a device as a usage error, and the
record-by-record outputs of ``summarize`` and ``rank`` (their pending records, errors file, and the
check that the output is not an input)."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import torch

from hiersum.checkpoints.io import Summarizer, load_summarizer
from hiersum.config import UsageError
from hiersum.data.formats import STDIN, InputError, read_records
from hiersum.data.jsonl_output import OutputError, completed_ids, write_jsonl_atomically
from hiersum.data.overwrite import refuse_overwriting_inputs
from hiersum.data.schema import Example, RecordError
from hiersum.inference.batched import PRECISIONS


def checked_device(device: str, precision: str = "32") -> str:
    """The kind (``cpu`` / ``cuda``) of ``device``; a malformed device, an absent CUDA or a precision the
    device cannot run is a :class:`UsageError`."""
    if precision not in PRECISIONS:
        raise UsageError(f"precision must be one of {', '.join(PRECISIONS)}; found {precision!r}")
    try:
        kind = torch.device(device).type
    except RuntimeError:
        raise UsageError(f"device must be cpu or cuda[:N]; found {device!r}") from None
    if kind == "cuda" and not torch.cuda.is_available():
        raise UsageError("device=cuda asked for, but no CUDA device is available")
    if kind == "cpu" and precision == "16":
        raise UsageError("precision=16 needs device=cuda (on cpu use precision=bf16)")
    return kind


def load_checkpoint(checkpoint: str) -> Summarizer:
    """:func:`load_summarizer`: a missing, unreadable or mismatched checkpoint raises its
    :class:`~hiersum.checkpoints.io.CheckpointError`, a :class:`UsageError` (one line, exit status 2)."""
    return load_summarizer(checkpoint)


def errors_path(output: Path) -> Path:
    """``out.jsonl`` -> ``out.errors.jsonl``."""
    return output.with_name(output.stem + ".errors.jsonl")


def refuse_record_output_over_inputs(target: str, inputs: dict[str, str | None]) -> None:
    """:func:`refuse_overwriting_inputs` for a record-by-record output ``target`` and its errors file."""
    outputs = {} if target == STDIN else {"output": target, "the errors file of output": errors_path(Path(target))}
    refuse_overwriting_inputs(outputs, inputs)


def collect(records: Iterable[Example | RecordError]) -> tuple[list[Example], list[RecordError]]:
    """Split valid examples from refused records, each in input order."""
    examples: list[Example] = []
    errors: list[RecordError] = []
    for item in records:
        (errors if isinstance(item, RecordError) else examples).append(item)
    return examples, errors


@dataclass
class PendingRecords:
    """What :func:`pending_records` returns."""

    pending: list[Example]
    """The records of the input still to write, in input order."""
    errors: list[RecordError]
    """Its malformed records."""
    output: Path | None
    """The output file; None for stdout."""
    already_done: int
    """Records the output already held (``resume``)."""


def pending_records(source: str, target: str, *, input_format: str, resume: bool) -> PendingRecords:
    """The records of ``source`` still to write to ``target``: a malformed record is reported on stderr
    and listed in the errors file beside the output; with ``resume``, the ids the output already holds
    are left out."""
    try:
        examples, errors = collect(read_records(source, input_format=input_format))
    except InputError as error:
        raise UsageError(str(error)) from None
    output = None if target == STDIN else Path(target)
    try:
        done = set(completed_ids(output)) if output is not None and resume else set()
    except OutputError as error:
        raise UsageError(str(error)) from None
    for error in errors:
        print(f"skipped malformed record: {error}", file=sys.stderr)
    if output is not None:
        write_errors(errors_path(output), errors)
    pending = [example for example in examples if example.id not in done]
    return PendingRecords(pending, errors, output, already_done=len(examples) - len(pending))


def write_errors(path: Path, errors: list[RecordError]) -> None:
    """The errors of this run replace those of an earlier one (the same input gives the same errors)."""
    if errors:
        write_jsonl_atomically(path, [e.as_record() for e in errors])
    else:
        path.unlink(missing_ok=True)
