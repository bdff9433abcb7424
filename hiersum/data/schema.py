"""The records that flow through the data pipeline.

``Example`` is what a reader yields (text), ``EncodedExample`` what the tokenizer
makes of it (ids), ``Batch`` what the collate function hands to the model.
Mask convention everywhere: bool, True = real token.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # annotations only: the tokenizing processes of ``hiersum prepare`` import this without torch
    import torch

    from hiersum.data.packing import PackedGrid

DATA_DOCS = "docs/data.md"
"""The documentation page of the data formats, which errors about a data file point to."""


class RecordError(ValueError):
    """A malformed input record: names the file, the line, the field and what was wrong, then points to
    :data:`DATA_DOCS` (``reason`` and :meth:`as_record` hold the message alone)."""

    def __init__(
        self, path: str, line: int, field_name: str | None, message: str, *, record_id: str | None = None
    ) -> None:
        where = f"{path}:{line}" + (f": field '{field_name}'" if field_name else "")
        super().__init__(f"{where}: {message} (see {DATA_DOCS})")
        self.path = path
        self.line = line
        self.field_name = field_name
        self.reason = message
        self.record_id = record_id
        """The record's id when it could be read (None otherwise)."""

    def as_record(self) -> dict[str, Any]:
        """The line of an errors file (``hiersum summarize``'s ``*.errors.jsonl``, a run's ``data_errors.jsonl``)."""
        return {"file": self.path, "line": self.line, "id": self.record_id, "field": self.field_name,
                "reason": self.reason}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> RecordError:
        """The error of an :meth:`as_record` line."""
        return cls(record["file"], record["line"], record["field"], record["reason"], record_id=record["id"])


@dataclass(frozen=True)
class Example:
    """One summarization example as text.

    ``documents`` holds each source document as a list of paragraph strings.
    ``references`` holds zero (summarize only) or more reference summaries.
    """

    id: str
    title: str
    documents: list[list[str]]
    references: list[str] = field(default_factory=list)


@dataclass
class EncodedExample:
    """An example as token ids after paragraph selection.

    ``paragraphs``: up to P lists of at most T ids. ``target``: summary ids without
    BOS/EOS (empty when there is no reference). ``provenance``: (document index,
    paragraph index) of each kept paragraph. ``graph``: the paragraph graph, float32 [len(paragraphs)]^2
    (weights in [0, 1], see ``hiersum/data/graph.py``) when the model uses one, else None. With ``model.copy_oov``
    the ids may hold extended ids V + k, ``oov_words[k]`` their text.

    Not frozen: a :class:`Batch` carries its examples (``sources``), and Lightning's ``convert_input`` (under
    ``trainer.precision=bf16-true``) rebuilds every dataclass of a batch with ``apply_to_collection``, which sets
    each field of a copy and refuses a frozen one. Equal when every field is, the graphs by value.
    """

    id: str
    paragraphs: list[list[int]]
    target: list[int]
    references: list[str]
    provenance: list[tuple[int, int]]
    n_dropped_paragraphs: int = 0
    graph: np.ndarray | None = None
    oov_words: list[str] = field(default_factory=list)
    """``model.copy_oov``: the text of the extended id V + k at position k (:mod:`hiersum.data.oov_words`); empty
    without the option or without ``<unk>`` in the source."""
    target_truncated: bool = False
    """The reference had more than ``data.max_target_tokens`` tokens: ``target`` holds its first ones."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, EncodedExample):
            return NotImplemented
        same_graph = (self.graph is None and other.graph is None) or (
            self.graph is not None and other.graph is not None and np.array_equal(self.graph, other.graph))
        return same_graph and all(getattr(self, f.name) == getattr(other, f.name) for f in fields(self)
                                  if f.name != "graph")


IGNORE_INDEX = -100
"""Label of a padding position in :meth:`Batch.target_labels` (the ignore index of the losses and metrics)."""


@dataclass
class Batch:
    """A padded batch.

    Shapes: ``src`` [B, P, T] long, ``src_mask`` [B, P, T] bool (True = real token),
    ``tgt_in`` [B, S] long (BOS + summary), ``tgt_out`` [B, S] long (summary + EOS),
    ``tgt_mask`` [B, S] bool (True = real target token). For a flat model (``model.encoder=flat``)
    ``src`` and ``src_mask`` are [B, L]: the paragraphs joined with a separator (see ``collate``).
    ``paragraph_graph`` [B, P, P] float (zero at padding) when the examples carry graphs, else None.
    ``layout``: the packed layout of ``src_mask`` (:class:`~hiersum.data.packing.PackedGrid`, made on the CPU by
    ``collate`` so the model's step reads no tensor value into Python), None for a flat batch.
    """

    ids: list[str]
    src: torch.Tensor
    src_mask: torch.Tensor
    tgt_in: torch.Tensor
    tgt_out: torch.Tensor
    tgt_mask: torch.Tensor
    references: list[list[str]]
    sources: list[EncodedExample]
    paragraph_graph: torch.Tensor | None = None
    layout: PackedGrid | None = None
    host_masks: tuple[torch.Tensor, torch.Tensor] | None = field(default=None, repr=False)
    """(``src_mask``, ``tgt_mask``) before :meth:`to` moved them (None until then)."""

    def to(self, device: torch.device | str, dtype: torch.dtype | None = None) -> Batch:
        """Move the tensors (and the layout) to ``device``, and the floating ones (``paragraph_graph``) to
        ``dtype`` when given; ``host_masks`` keeps the masks as they were (on the CPU after ``collate``), for
        counting FLOPs without a device sync."""
        if self.host_masks is None:
            self.host_masks = (self.src_mask, self.tgt_mask)
        for name in ("src", "src_mask", "tgt_in", "tgt_out", "tgt_mask"):
            setattr(self, name, getattr(self, name).to(device))
        if self.paragraph_graph is not None:
            self.paragraph_graph = self.paragraph_graph.to(device, dtype=dtype)
        if self.layout is not None:
            self.layout = self.layout.to(device)
        return self

    @property
    def n_target_tokens(self) -> int:
        """The real target tokens (sum of ``tgt_mask``), counted on the host copy of the mask: no device sync."""
        target_mask = self.tgt_mask if self.host_masks is None else self.host_masks[1]
        return int(target_mask.sum())

    def __len__(self) -> int:
        return len(self.ids)

    def target_labels(self) -> torch.Tensor:
        """``tgt_out`` with padding replaced by :data:`IGNORE_INDEX`: [B, S]."""
        return self.tgt_out.masked_fill(~self.tgt_mask, IGNORE_INDEX)
