"""The kinds of checkpoint hiersum reads and the one error of reading them: :class:`CheckpointKind` (what a
file of a kind is called, what is expected, how it is used), :class:`CheckpointError` (one line naming the file,
what it is and what was expected), and the checks every reader shares.

The lowest module of :mod:`hiersum.checkpoints`, whose readers import one way only: ``io`` (checkpoint files,
and :func:`~hiersum.checkpoints.io.load_network` for either) -> ``directory`` (model directories) -> ``contents``
(what a checkpoint carries) -> ``kinds``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from hiersum.data.torch_files import TorchFileError, file_problem


class CheckpointError(TorchFileError):
    """Any failure to read a file as the hiersum checkpoint expected (missing, a directory, not a torch file,
    another kind of checkpoint, missing entries, weights that do not fit the model): one line naming the file,
    what it is and what was expected (a :class:`~hiersum.errors.UsageError`: the commands print it and exit
    with status 2); the original exception, if any, is its ``__cause__``."""


@dataclass(frozen=True)
class CheckpointKind:
    """A kind of checkpoint hiersum reads: what it is called, what the commands expect, how it is used."""

    name: str
    """What a file of this kind is: ``a ranker checkpoint of hiersum train-ranker``."""
    noun: str
    """What a missing file of this kind is called: ``ranker checkpoint`` (``ranker checkpoint not found``)."""
    expected: str
    """The ``expected ...`` of an error message."""
    hint: str
    """How a file of this kind is used, when it is found where another kind is expected (``{path}``: its path)."""


SUMMARIZER = CheckpointKind(
    "a hiersum checkpoint", "checkpoint",
    "a hiersum checkpoint (the .ckpt of hiersum train, import-hiersumm or average-checkpoints, or a model directory "
    "of hiersum export)",
    "give it as checkpoint= of hiersum summarize or hiersum evaluate",
)
RESUME = replace(SUMMARIZER, expected="a training checkpoint of hiersum train to resume from (ckpt_path=FILE or last)")
"""A summarizer checkpoint that ``hiersum train ckpt_path=`` resumes from (it holds the optimizer states too)."""
INIT_FROM = replace(SUMMARIZER, expected="a hiersum checkpoint (a .ckpt of hiersum train, import-hiersumm or "
                                         "average-checkpoints) or a model directory of hiersum export to fine-tune "
                                         "from (init_from=)")
"""A summarizer checkpoint or model directory that ``hiersum train init_from=`` starts a new run from."""
RANKER = CheckpointKind(
    "a ranker checkpoint of hiersum train-ranker", "ranker checkpoint",
    "a ranker checkpoint of hiersum train-ranker", "give it as ranker= of hiersum rank (or data.ranker=)",
)
OFFICIAL = CheckpointKind(
    "an official hiersumm checkpoint", "official checkpoint",
    "an official hiersumm checkpoint ({'model', 'opt'}, e.g. model_step_500000.pt)",
    "convert it first: hiersum import-hiersumm --checkpoint {path} --output OUT.ckpt",
)


def check_file(path: str | Path, kind: CheckpointKind) -> None:
    """Raise the :class:`CheckpointError` of a ``path`` that is no file to read (missing, a directory, empty)."""
    problem = file_problem(Path(path), noun=kind.noun)
    if problem:
        raise CheckpointError(path, problem, kind.expected)


@contextlib.contextmanager
def rebuilding(path: str | Path, kind: CheckpointKind, entries: str) -> Iterator[None]:
    """Turn any failure to rebuild what the checkpoint's ``entries`` describe (a missing key, a value the
    constructors refuse) into a :class:`CheckpointError`."""
    try:
        yield
    except CheckpointError:
        raise
    except KeyError as error:
        raise CheckpointError(path, f"its {entries} have no {error.args[0]!r}", kind.expected) from error
    except Exception as error:  # whatever the constructors raise: the entries do not describe a model
        raise CheckpointError(path, f"its {entries} do not describe a model ({one_line(error)})",
                              kind.expected) from error


def one_line(error: BaseException, limit: int = 300) -> str:
    """The message of ``error`` on one line, at most ``limit`` characters."""
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."
