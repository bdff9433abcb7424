"""The record-by-record outputs of ``summarize`` and ``rank`` (:class:`ResumableOutput`): what they read still to
write, the files beside an output, and a run that stops in the middle.

:class:`ResumableOutput` owns the order of the steps, which only work in that order: check the output
(writable; a resumed one made as this run would make it), read the records still to write (the errors file
written), refuse an empty input, begin the output (an afresh one emptied, the provenance written), write
its lines (:meth:`ResumableOutput.writing`), and finish with the :class:`OutputResult` and its one line.

Beside ``out.jsonl``:

``out.errors.jsonl``
    The input records refused (malformed, repeated id), rewritten by every run; a side file, whose failure
    to be written is reported in one line and never stops the output.
``out.provenance.json``
    What made the output (:class:`Provenance`: the checkpoint's SHA-256, the input, the options that change
    an output line, the hiersum version). A resumed run (``resume=true``) whose provenance differs stops in
    one line naming what differs, before anything is written: two models' outputs never mix in one file.
    ``overwrite=true`` (or ``resume=false``) starts the output afresh: an empty file renamed over it once the
    run has checked everything else.

The output is checked to be writable before the work starts. A run stopped by Ctrl-C, SIGTERM or a
failed write (a full disk) leaves every line written so far complete (one ``write`` a line, see
:mod:`hiersum.data.jsonl_output`), and says so in one line with the command that resumes it
(:class:`hiersum.errors.RunStopped`).

Nothing here reads Hydra: the command that resumes a run is given by the command (``rerun``).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from hiersum.atomic import write_bytes_atomically, write_text_atomically
from hiersum.data.formats import STDIN, read_records
from hiersum.data.jsonl_output import JsonlAppender, completed_ids, write_jsonl_atomically
from hiersum.data.overwrite import refuse_overwriting_inputs
from hiersum.data.schema import Example, RecordError
from hiersum.errors import RunStopped, Terminated, UsageError, interruption_status
from hiersum.inference.batched import is_out_of_memory, progress_bar

CHUNK = 1 << 20


def errors_path(output: Path) -> Path:
    """``out.jsonl`` -> ``out.errors.jsonl``."""
    return output.with_name(output.stem + ".errors.jsonl")


def provenance_path(output: Path) -> Path:
    """``out.jsonl`` -> ``out.provenance.json``."""
    return output.with_name(output.stem + ".provenance.json")


def refuse_output_over_inputs(target: str, inputs: dict[str, str | None]) -> None:
    """:func:`refuse_overwriting_inputs` for a record-by-record output ``target`` and the files beside it."""
    if target == STDIN:
        return
    output = Path(target)
    outputs = {"output": output, "the errors file of output": errors_path(output),
               "the provenance file of output": provenance_path(output)}
    refuse_overwriting_inputs(outputs, inputs)


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file's bytes (read in 1 MiB chunks)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def checkpoint_sha256(path: str | Path) -> str:
    """The fingerprint of a checkpoint: the SHA-256 of a file's bytes; for a directory (a model directory of
    ``hiersum export``), the SHA-256 of each file's relative name and bytes' SHA-256, in name order, so that the
    same files give the same fingerprint wherever the directory is."""
    path = Path(path)
    if not path.is_dir():
        return file_sha256(path)
    digest = hashlib.sha256()
    for file in sorted(child for child in path.rglob("*") if child.is_file()):
        digest.update(f"{file.relative_to(path).as_posix()}\0{file_sha256(file)}\n".encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class Provenance:
    """What made a record-by-record output: equal provenances give the same lines for the same input."""

    command: str
    """``summarize`` or ``rank``."""
    model_sha256: str | None
    """SHA-256 of the checkpoint (summarize; a model directory: :func:`checkpoint_sha256`) or ranker checkpoint (rank);
    None for ``ranker=tfidf``."""
    input: str
    """The input, as an absolute path (``-`` for standard input)."""
    options: dict[str, Any]
    """The options that change an output line (decoding, paragraph selection, precision, ...)."""
    hiersum_version: str

    @classmethod
    def of(cls, command: str, *, model: str | None, source: str, options: dict[str, Any]) -> Provenance:
        return cls(command=command, model_sha256=checkpoint_sha256(model) if model else None,
                   input=source if source == STDIN else str(Path(source).resolve()),
                   options=json.loads(json.dumps(options, default=str)),
                   hiersum_version=importlib.metadata.version("hiersum"))

    def differences(self, other: dict[str, Any]) -> list[str]:
        """The names of what differs from ``other`` (a provenance as read from its file); options by key."""
        mine = asdict(self)
        names = [key for key in mine if key != "options" and mine[key] != other.get(key)]
        theirs = other.get("options") if isinstance(other.get("options"), dict) else {}
        names += [f"options.{key}" for key in sorted(set(self.options) | set(theirs))
                  if self.options.get(key) != theirs.get(key)]
        return names


def check_writable(path: Path, what: str) -> None:
    """A :class:`UsageError` unless ``path`` can be written (created, or appended to when it exists)."""
    parent = next((folder for folder in [path.parent, *path.parent.parents] if folder.exists()), Path("/"))
    if path.exists():
        writable, place = path.is_file() and os.access(path, os.W_OK), path
    else:
        writable, place = parent.is_dir() and os.access(parent, os.W_OK | os.X_OK), parent
    if not writable:
        kind = "not a writable folder" if place == parent and not path.exists() else "not writable"
        raise UsageError(f"cannot write {what} {path}: {place} is {kind}; choose another output (nothing was written)")


def _start_output(target: str, provenance: Provenance, *, resume: bool) -> bool:
    """Check, before any work, that ``target`` can be written and, when resuming an existing output, that
    it was made as this run would make it. Returns whether the output starts afresh
    (a new file, ``resume=false`` or ``overwrite=true``). Standard output: nothing to check."""
    if target == STDIN:
        return not resume
    output = Path(target)
    check_writable(output, "output")  # the files beside it are side files: see _write_side_file
    if not resume or not output.is_file() or output.stat().st_size == 0:
        return True
    recorded = _read_provenance(output)
    differences = provenance.differences(recorded)
    if differences:
        raise UsageError(
            f"{output} was written with another {', '.join(differences)} (see {provenance_path(output)}); "
            "resuming would mix two runs' outputs: choose another output, or pass overwrite=true to start afresh"
        )
    return False


def _read_provenance(output: Path) -> dict[str, Any]:
    path = provenance_path(output)
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{output} holds records but no {path.name} says what made them, so resuming could mix "
                         "two runs' outputs: choose another output, or pass overwrite=true to start afresh") from None
    except (OSError, ValueError) as error:
        raise UsageError(f"{path}: expected the JSON provenance of {output.name}, found unreadable content "
                         f"({error}); pass overwrite=true to start afresh") from None
    if not isinstance(recorded, dict):
        raise UsageError(f"{path}: expected a JSON object, found {type(recorded).__name__}; pass overwrite=true")
    return recorded


def _begin_output(target: str, provenance: Provenance, *, afresh: bool) -> None:
    """Once everything is checked: an afresh output becomes an empty file (renamed over the old one, so the
    old one stays whole until then), and the provenance file is (re)written. A provenance file that cannot
    be written is reported in one line; the output goes on."""
    if target == STDIN:
        return
    output = Path(target)
    if afresh:
        write_bytes_atomically(output, b"")
    text = json.dumps(asdict(provenance), indent=1, ensure_ascii=False) + "\n"
    _write_side_file(provenance_path(output), lambda path: write_text_atomically(path, text))


def _write_side_file(path: Path, write: Any) -> None:
    try:
        write(path)
    except OSError as error:
        print(f"warning: cannot write {path} ({error.strerror or error}); the output goes on without it",
              file=sys.stderr)


def collect(records: Iterable[Example | RecordError]) -> tuple[list[Example], list[RecordError]]:
    """Split valid examples from refused records, each in input order."""
    examples: list[Example] = []
    errors: list[RecordError] = []
    for item in records:
        (errors if isinstance(item, RecordError) else examples).append(item)
    return examples, errors


@dataclass
class PendingRecords:
    """What :func:`_pending_records` returns."""

    pending: list[Example]
    """The records of the input still to write, in input order."""
    errors: list[RecordError]
    """Its malformed records."""
    output: Path | None
    """The output file; None for stdout."""
    already_done: int
    """Records the output already held (``resume``)."""

    @property
    def n_records(self) -> int:
        """Records the input holds, valid or not."""
        return len(self.pending) + self.already_done + len(self.errors)


def _pending_records(source: str, target: str, *, input_format: str, resume: bool,
                    keeps: Callable[[int], bool] | None = None,
                    layout: Mapping[str, Any] | None = None) -> PendingRecords:
    """The records of ``source`` still to write to ``target``: a malformed record is reported on stderr
    and listed in the errors file beside the output; with ``resume``, the ids the output already holds
    are left out; with ``keeps``, only the records at the positions it keeps (a shard) are read. ``layout``: the
    line-pair layout of :func:`hiersum.data.formats.read_records`."""
    records = read_records(source, input_format=input_format, layout=layout)  # InputError, OutputError: usage errors
    examples, errors = collect(item for position, item in enumerate(records) if keeps is None or keeps(position))
    output = None if target == STDIN else Path(target)
    done = set(completed_ids(output)) if output is not None and resume else set()
    for error in errors:
        print(f"skipped malformed record: {error}", file=sys.stderr)
    if output is not None:
        _write_side_file(errors_path(output), lambda path: write_errors(path, errors))
    pending = [example for example in examples if example.id not in done]
    return PendingRecords(pending, errors, output, already_done=len(examples) - len(pending))


def _refuse_empty_input(records: PendingRecords, source: str, *, strict: bool) -> None:
    """An input that holds no record at all: a one-line warning, or with ``strict`` a :class:`UsageError`."""
    if records.n_records:
        return
    message = f"{source} holds no record: nothing to write"
    if strict:
        raise UsageError(f"{message} (strict=true)")
    print(f"warning: {message} (strict=true makes this an error)", file=sys.stderr)


def write_errors(path: Path, errors: list[RecordError]) -> None:
    """The errors of this run replace those of an earlier one (the same input gives the same errors)."""
    if errors:
        write_jsonl_atomically(path, [e.as_record() for e in errors])
    else:
        path.unlink(missing_ok=True)


@dataclass
class Written:
    """How many output lines a run has written so far (what :func:`stopping_in_one_line` reports)."""

    lines: int = 0


@contextlib.contextmanager
def stopping_in_one_line(target: str, noun: str, *, rerun: str, memory_hint: str) -> Iterator[Written]:
    """Run a write loop (which counts its lines in the :class:`Written` it is given): SIGTERM is raised as
    :class:`Terminated`; Ctrl-C, SIGTERM, a failed write and running out of memory end in :class:`RunStopped`,
    saying how many ``noun`` were written (each line complete), what to change (``memory_hint``: the batch
    settings to lower) and the command that resumes (``rerun``; exit status 130, 143, or 1)."""
    where = "stdout" if target == STDIN else target
    resume = f"rerun {rerun} to resume (every record once)"
    written = Written()
    on_main_thread = threading.current_thread() is threading.main_thread()  # signal handlers live there only
    previous = signal.signal(signal.SIGTERM, _raise_terminated) if on_main_thread else None
    try:
        yield written
    except KeyboardInterrupt as error:
        signal_name = "SIGTERM" if isinstance(error, Terminated) else "Ctrl-C"
        raise RunStopped(f"stopped by {signal_name}: {written.lines} {noun} written to {where}, each line "
                         f"complete; {resume}", exit_status=interruption_status(error)) from None
    except OSError as error:
        raise RunStopped(f"cannot write {where} ({error.strerror or error}): {written.lines} {noun} written, "
                         f"each line complete; free the space or fix the folder, then {resume}",
                         exit_status=1) from None
    except (RuntimeError, torch.cuda.OutOfMemoryError) as error:
        if not is_out_of_memory(error):
            raise
        raise RunStopped(f"out of memory: {memory_hint}; {written.lines} {noun} written to {where}, each line "
                         f"complete; {resume} with the lower setting", exit_status=1) from None
    finally:
        if on_main_thread:
            signal.signal(signal.SIGTERM, previous)


def _raise_terminated(*_signal_and_frame: Any) -> None:
    """The SIGTERM handler: raise :class:`Terminated` where the program is."""
    raise Terminated()


@dataclass(frozen=True)
class OutputResult:
    """What a record-by-record run did (``hiersum summarize``, ``hiersum rank``)."""

    written: int
    """Lines written by this run."""
    already_done: int
    """Valid input records whose line was already in the output (resume)."""
    errors: int
    """Records refused (malformed or repeated id)."""


@dataclass
class LineWriter:
    """What :meth:`ResumableOutput.writing` gives the write loop: each :meth:`write` is one complete line, counted."""

    appender: JsonlAppender
    written: Written
    advance: Callable[[int], None]
    """Move the progress bar on by this many records."""

    def write(self, record: dict[str, Any]) -> None:
        self.appender.write(record)
        self.written.lines += 1

    def sync(self) -> None:
        """Make the lines written so far durable (after each batch)."""
        self.appender.sync()


class ResumableOutput:
    """The output of one record-by-record run into ``target`` (a JSONL file, or ``-``: standard output), in the
    only order that works::

        output = ResumableOutput(target, Provenance.of(...), noun="summaries", rerun="hiersum summarize ...")
        pending = output.start(source, input_format=..., resume=..., strict=...)  # check, then begin
        with output.writing(memory_hint=..., description="summarizing") as lines:
            lines.write(record); lines.sync(); lines.advance(n)                   # write
        return output.finish()                                                    # finish: the result, one line

    ``noun`` names the lines in messages (``summaries``); ``rerun`` is the command that resumes a stopped run.
    An output beside its inputs is refused earlier, before the model loads (:func:`refuse_output_over_inputs`).
    """

    def __init__(self, target: str, provenance: Provenance, *, noun: str, rerun: str) -> None:
        self.target = target
        self.provenance = provenance
        self.noun = noun
        self.rerun = rerun
        self._records: PendingRecords | None = None
        self._written = Written()

    def start(self, source: str, *, input_format: str, resume: bool, strict: bool,
              keeps: Callable[[int], bool] | None = None, layout: Mapping[str, Any] | None = None) -> list[Example]:
        """Check the output (writable; when resumed, made with this provenance), read the records of ``source``
        still to write (:func:`_pending_records`, the errors file written beside the output; ``layout``: a line
        pair's separators), refuse an empty input (``strict``; else a warning), then begin the output (emptied when
        afresh, its provenance written). Returns the records to write, in input order. Raises :class:`UsageError`
        before anything is written."""
        afresh = _start_output(self.target, self.provenance, resume=resume)
        records = _pending_records(source, self.target, input_format=input_format, resume=not afresh, keeps=keeps,
                                   layout=layout)
        _refuse_empty_input(records, source, strict=strict)
        _begin_output(self.target, self.provenance, afresh=afresh)
        self._records = records
        return records.pending

    @contextlib.contextmanager
    def writing(self, *, memory_hint: str, description: str) -> Iterator[LineWriter]:
        """The write loop's :class:`LineWriter`, under :func:`stopping_in_one_line` (``memory_hint``: the batch
        settings to lower when memory runs out) with a progress bar (``description``) over the pending records."""
        records = self._started()
        with (stopping_in_one_line(self.target, self.noun, rerun=self.rerun, memory_hint=memory_hint) as written,
              JsonlAppender(records.output) as appender, progress_bar(description) as bar):
            task = bar.add_task(description, total=len(records.pending))
            self._written = written
            yield LineWriter(appender, written, lambda n: bar.advance(task, n))

    def finish(self) -> OutputResult:
        """The run's :class:`OutputResult`, said in one line on stderr."""
        records = self._started()
        result = OutputResult(written=self._written.lines, already_done=records.already_done,
                              errors=len(records.errors))
        print(f"wrote {result.written} {self.noun} to {records.output or 'stdout'} "
              f"({result.already_done} already there); {result.errors} records refused", file=sys.stderr)
        return result

    def _started(self) -> PendingRecords:
        if self._records is None:
            raise RuntimeError("ResumableOutput.start() must run first: it checks the output before anything is "
                               "written")
        return self._records
