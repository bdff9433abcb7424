"""The fixed choices of config fields: :class:`ConfigEnum` and its members (strings equal to their values)."""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum, EnumMeta
from typing import Any


class ConfigEnum(str, Enum):
    """A fixed choice of a config field: a ``str`` equal to its value, printed as its value.

    Member names equal their values: OmegaConf looks a YAML or command-line string up by name and
    refuses any other at composition. An integer from the command line (``precision=16``) is looked
    up by its digits. An alias (a name whose value is another member's: ``Precision`` ``bf16``) is that member,
    looked up by name or by value.
    """

    def __str__(self) -> str:
        return str(self.value)

    def __repr__(self) -> str:
        return repr(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)

    @classmethod
    def _missing_(cls, value: object) -> ConfigEnum | None:
        if isinstance(value, (int, str)) and not isinstance(value, bool):
            return cls.__members__.get(str(value))  # a name that is no value: an alias (``Precision("bf16")``)
        return None

    @classmethod
    def coerce(cls, value: Any, key: str) -> Any:
        """``value`` as a member (from a member or its string); ``ValueError`` naming ``key`` otherwise."""
        try:
            return cls(value)
        except ValueError:
            choices = ", ".join(map(repr, cls.__members__))  # aliases too
            raise ValueError(f"{key} must be one of {choices}, found {value!r}") from None


class Graph(ConfigEnum):
    """``model.graph``: the paragraph graph biasing the inter-paragraph attention."""

    none = "none"
    similarity = "similarity"
    discourse = "discourse"


class Selection(ConfigEnum):
    """``data.selection``: the order paragraphs are kept in."""

    first = "first"
    round_robin = "round_robin"
    tfidf = "tfidf"
    """Cosine similarity of tf-idf word vectors to the title, or to the example's centroid without a title."""
    ranker = "ranker"
    """The score of a trained paragraph ranker (``data.ranker``: its checkpoint; ``hiersum train-ranker``)."""


class Paragraphs(ConfigEnum):
    """``data.paragraphs``: how a document's text becomes the paragraphs selection chooses from."""

    given = "given"
    """As the reader gives them (blank lines, a format's own units: a SciTLDR sentence, an email line)."""
    sentences = "sentences"
    """Each given paragraph split into sentences (NLTK's Punkt), consecutive sentences grouped into paragraphs of
    at most ``data.max_paragraph_tokens`` tokens (:mod:`hiersum.data.paragraphs`): for text without paragraph
    breaks, such as a CNN/DailyMail article."""


class TextNormalization(ConfigEnum):
    """``data.text_normalization``: how raw text is made to look like the training corpus's text before it is
    tokenized (:mod:`hiersum.data.normalization`)."""

    none = "none"
    """The text as given."""
    ptb = "ptb"
    """Penn-Treebank-style word tokens as CNN/DailyMail's tokenized release has them (NLTK's Treebank tokenizer,
    ``do n't``, ``( cnn )``, hyphens split but after common prefixes); summaries detokenized for reading."""


class OnError(ConfigEnum):
    """``data.on_error``: what a malformed record of a data split does."""

    fail = "fail"
    """Stop with one line naming the file, line, field, what was expected and found (exit status 2)."""
    skip = "skip"
    """Leave the record out, count it and list it in ``<run>/data_errors.jsonl``."""


class Stopping(ConfigEnum):
    """``decode.stopping``: when beam search ends an example."""

    full = "full"
    official = "official"


class Baseline(ConfigEnum):
    """``hiersum evaluate baselines``: the baselines built from the examples
    (``hiersum.evaluation.baselines.BASELINES``)."""

    lead = "lead"
    lead3 = "lead3"
    oracle = "oracle"
    lexrank = "lexrank"


def fixed_choices(*values: str, aliases: dict[str, str] | None = None) -> Callable[[type[ConfigEnum]], type[Enum]]:
    """A class decorator: the :class:`ConfigEnum` class it decorates (its name, module and docstring; a body of a
    docstring alone), made with the members ``values``, each its own name (a value need not be an identifier:
    ``127.0.0.1``, which a class body cannot name), and ``aliases``: names of the member of each value.

    A type checker reads the class statement (a class decorator does not change the type it sees), so the class is
    a type in annotations (``host: ServeHost``) and its call (``ServeHost("::")``) a member of it."""
    members = [(value, value) for value in values] + list((aliases or {}).items())

    def make(declared: type[ConfigEnum]) -> type[Enum]:
        extra = set(vars(declared)) - set(vars(ConfigEnum)) - {"__doc__", "__module__", "__qualname__"}
        if any(not name.startswith("_") for name in extra):
            raise TypeError(f"{declared.__name__}: a class of @fixed_choices holds a docstring alone, found "
                            f"{sorted(name for name in extra if not name.startswith('_'))}")
        made = EnumMeta.__call__(ConfigEnum, declared.__name__, members, module=declared.__module__,
                                 qualname=declared.__qualname__)
        made.__doc__ = declared.__doc__
        return made

    return make


@fixed_choices("127.0.0.1", "0.0.0.0", "::")
class ServeHost(ConfigEnum):
    """``hiersum serve host``: the addresses LitServe listens on: this machine, every IPv4 interface, every
    interface."""


class ServeAccelerator(ConfigEnum):
    """``hiersum serve accelerator``: LitServe's accelerator (one inference worker per device)."""

    auto = "auto"
    cpu = "cpu"
    cuda = "cuda"
    mps = "mps"


PRECISION_ALIASES = {"64": "64-true", "32": "32-true", "16": "16-mixed", "bf16": "bf16-mixed"}
"""Lightning's legacy precision names and the precision each is (its ``_PRECISION_INPUT_STR_ALIAS_CONVERSION``,
which ``Trainer`` applies; a test keeps them equal: Lightning is not imported here)."""


@fixed_choices("transformer-engine", "transformer-engine-float16", "16-true", "16-mixed", "bf16-true", "bf16-mixed",
               "32-true", "64-true", aliases=PRECISION_ALIASES)
class Precision(ConfigEnum):
    """The numeric precision, one vocabulary for training and decoding: Lightning's names (``trainer.precision``; a
    test keeps them ``lightning_fabric.connector._PRECISION_INPUT``'s), each alias of :data:`PRECISION_ALIASES` read
    as the precision it is (``precision=bf16`` is ``bf16-mixed`` once composed, as Lightning reads it). What decoding
    does under each (``hiersum summarize`` / ``serve`` ``precision``, ``load_summarizer``, the validation ROUGE of a
    training run): :data:`hiersum.inference.precision.PRECISIONS`."""


class LogLevel(ConfigEnum):
    """``hiersum serve log_level``: of LitServe and uvicorn."""

    critical = "critical"
    error = "error"
    warning = "warning"
    info = "info"
    debug = "debug"
    trace = "trace"


class RankerFeature(ConfigEnum):
    """``ranker_model.features``: a paragraph feature the ranker's score layer reads
    (:func:`hiersum.data.ranker_data.paragraph_features`)."""

    length = "length"
    """log(1 + words)."""
    tfidf = "tfidf"
    """Cosine of tf-idf vectors to the title, or to the centroid (the ``tfidf`` selection's score)."""
    position = "position"
    """1 / (1 + the paragraph's index in its document)."""


@fixed_choices(*(member.value for member in Selection), "oracle")
class SelectionStrategy(ConfigEnum):
    """``hiersum evaluate-selection strategies``: a paragraph selection compared
    (:func:`hiersum.evaluation.selection.strategy_orders`): each :class:`Selection` (``ranker`` needs ``ranker=``, a
    checkpoint of ``hiersum train-ranker``), and ``oracle``, the paragraphs by their own ROUGE-2 recall against the
    reference."""
