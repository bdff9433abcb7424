"""Extractive baselines scored beside the model, built from the same examples.

``lead``
    The leading words of the source (paragraphs in order), as many as the first reference has
    (:func:`hiersum.evaluation.metrics.lead_baseline`).
``lead3``
    The source's first three sentences (See et al. 2017's lead-3, the usual CNN/DailyMail baseline), whatever
    the reference's length.
``oracle``
    Greedy extractive oracle (Nallapati et al. 2017, as in PreSumm): source sentences are added one
    at a time, each time the one that most raises the mean of ROUGE-1 and ROUGE-2 F1 against the
    best-matching reference, until no sentence raises it (or ``max_sentences``); sentences are output
    in source order. Tokens and n-grams come from rouge-score (its stemming tokenizer, its n-gram counts:
    :func:`hiersum.private_apis.rouge_ngrams`) and the scores are rouge-score's ``_score_ngrams`` formulas (clipped
    n-gram overlap over the prediction's and the reference's counts, F1 as ``scoring.fmeasure``), so the objective is
    exactly rouge-score's; each step scores every candidate at once from the overlap the selection already has
    (:class:`OracleCounts`).
``lexrank``
    LexRank (Erkan & Radev 2004, continuous version): PageRank (damping 0.85; :func:`pagerank`, networkx's
    algorithm) over the graph of tf-idf cosine similarities between the source sentences
    (:func:`hiersum.data.similarity.tfidf_cosine`, the ``similarity`` paragraph graph's); the most central sentences
    are taken until the first reference's length in words is reached, put in source order and cut to that length.
    A library was preferred and none fits offline: ``sumy`` needs NLTK's punkt data for its English
    tokenizer (not installable without a download) and brings lxml/requests/breadability; the
    ``lexrank`` package is unmaintained since 2018. networkx's ``pagerank`` computed the same ranks, but from a
    graph object of every sentence pair built in Python, most of LexRank's time on a large cluster.

Source sentences: every paragraph of every document (the title left out) split by hiersum's one sentence splitter
(NLTK's Punkt, :func:`hiersum.data.sentences.split_sentences`, the paragraph rule's and ROUGE-Lsum's).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np

from hiersum.data.schema import Example
from hiersum.data.sentences import split_sentences
from hiersum.data.similarity import tfidf_cosine
from hiersum.evaluation.metrics import lead_baseline, rouge_tokenizer
from hiersum.private_apis import rouge_ngrams

BASELINES = ("lead", "lead3", "oracle", "lexrank")
LEAD_SENTENCES = 3
"""The sentences of ``lead3``."""
ORACLE_MAX_SENTENCES = 5
ORACLE_NGRAMS = (1, 2)
"""The ROUGE-N whose F1s the oracle averages."""
LEXRANK_DAMPING = 0.85
LEXRANK_TIE_DECIMALS = 9
"""Decimals of a LexRank centrality times the sentence count (about 1) that :func:`lexrank_centrality` keeps:
sentences of the same tf-idf direction (a repeated sentence, one differing only in punctuation, case or a repeated
word) or otherwise symmetric places in the graph have the same centrality, which float64 sums leave unequal in the
last bits (1e-16); rounded, they tie and are taken in source order. 1e-9 is far below what the power iteration
settles (its tolerance: 1e-6 in L1)."""


def source_sentences(example: Example) -> list[str]:
    """The sentences of the example's documents, in order (title excluded)."""
    return [sentence for document in example.documents for paragraph in document
            for sentence in split_sentences(paragraph)]


def lead(example: Example) -> str:
    """The source's first words, as many as the first reference has."""
    return lead_baseline([p for document in example.documents for p in document], example.references[0])


def lead3(example: Example) -> str:
    """The source's first :data:`LEAD_SENTENCES` sentences (the title left out), one a line (for ROUGE-Lsum)."""
    return "\n".join(source_sentences(example)[:LEAD_SENTENCES])


class OracleCounts:
    """One ROUGE-N's n-gram counts of N candidate sentences against R references, and the overlap of a growing
    selection of them, as rouge-score's ``_score_ngrams`` counts it: ``overlap = sum over n-grams of min(reference
    count, selection count)``, precision = overlap / max(selection's n-grams, 1), recall = overlap / max(reference's
    n-grams, 1). All counts are integers held exactly in float64, so the scores are rouge-score's to the bit.

    ``rows``, ``columns``, ``counts`` [E]: sentence, n-gram and count of each (sentence, n-gram) pair.
    ``reference_counts`` [R, G]: each reference's count of each n-gram of the sentences.
    """

    def __init__(self, sentences: Sequence[Counter], references: Sequence[Counter]) -> None:
        vocabulary: dict[tuple[str, ...], int] = {}
        self.rows = np.repeat(np.arange(len(sentences)), [len(grams) for grams in sentences])
        self.columns = np.array([vocabulary.setdefault(g, len(vocabulary)) for grams in sentences for g in grams],
                                dtype=np.int64)
        self.counts = np.array([count for grams in sentences for count in grams.values()], dtype=np.float64)
        self.sentence_totals = np.array([sum(grams.values()) for grams in sentences], dtype=np.float64)  # [N]
        self.reference_counts = np.array([[reference[g] for g in vocabulary] for reference in references],
                                         dtype=np.float64).reshape(len(references), len(vocabulary))
        self.reference_totals = np.array([sum(reference.values()) for reference in references], dtype=np.float64)
        self.selected = np.zeros(len(vocabulary))  # [G] the selection's counts
        self.overlap = np.zeros(len(references))  # [R]
        self.total = 0.0  # the selection's n-grams

    def f1_with_each(self) -> np.ndarray:
        """[R, N]: the F1 of the selection plus each sentence, against each reference."""
        selected = self.selected[self.columns]  # [E]
        n_sentences = len(self.sentence_totals)
        overlap = np.stack([
            self.overlap[r] + np.bincount(self.rows, weights=np.minimum(selected + self.counts, reference[self.columns])
                                          - np.minimum(selected, reference[self.columns]), minlength=n_sentences)
            for r, reference in enumerate(self.reference_counts)
        ]).reshape(len(self.reference_counts), n_sentences)  # [R, N]
        precision = overlap / np.maximum(self.total + self.sentence_totals, 1)
        recall = overlap / np.maximum(self.reference_totals, 1)[:, None]
        both = precision + recall
        return np.divide(2 * precision * recall, both, out=np.zeros_like(both), where=both > 0)

    def add(self, sentence: int) -> None:
        """Add ``sentence`` to the selection."""
        mine = self.rows == sentence
        self.selected[self.columns[mine]] += self.counts[mine]
        self.overlap = np.minimum(self.selected, self.reference_counts).sum(axis=1)
        self.total += self.sentence_totals[sentence]


def oracle(example: Example, *, max_sentences: int = ORACLE_MAX_SENTENCES) -> str:
    """Greedy selection of source sentences maximizing (ROUGE-1 F1 + ROUGE-2 F1) / 2."""
    tokenizer = rouge_tokenizer()  # the stemming tokenizer ROUGE is computed with
    sentences = source_sentences(example)
    sentence_tokens = [tokenizer.tokenize(s) for s in sentences]
    reference_tokens = [tokenizer.tokenize(r) for r in example.references]
    scorers = [OracleCounts([rouge_ngrams(tokens, n) for tokens in sentence_tokens],
                            [rouge_ngrams(tokens, n) for tokens in reference_tokens]) for n in ORACLE_NGRAMS]
    selected: list[int] = []
    best = 0.0
    while len(selected) < min(max_sentences, len(sentences)):
        unigram_f1, bigram_f1 = (scorer.f1_with_each() for scorer in scorers)  # [R, N] each
        objective = ((unigram_f1 + bigram_f1) / 2).max(axis=0)  # [N]: the best-matching reference's
        objective[selected] = -np.inf
        index = int(np.argmax(objective))  # the first of equal scores: the earliest sentence
        if objective[index] <= best:
            break
        best = float(objective[index])
        selected.append(index)
        for scorer in scorers:
            scorer.add(index)
    return " ".join(sentences[i] for i in sorted(selected))


def pagerank(weights: np.ndarray, *, damping: float = LEXRANK_DAMPING, tolerance: float = 1e-6,
             max_iterations: int = 100) -> np.ndarray:
    """[N] PageRank of the weighted graph ``weights`` [N, N] (float64, >= 0; 0 = no edge), by networkx's
    ``pagerank`` algorithm with its defaults: uniform start, teleport and dangling-node vectors; power iteration
    until the L1 change is below ``N * tolerance``."""
    n_nodes = len(weights)
    out_weights = weights.sum(axis=1)
    dangling = out_weights == 0
    transition = np.divide(weights, out_weights[:, None], out=np.zeros_like(weights), where=~dangling[:, None])
    uniform = np.full(n_nodes, 1.0 / n_nodes)
    rank = uniform
    for _ in range(max_iterations):
        previous = rank
        rank = damping * (rank @ transition + rank[dangling].sum() * uniform) + (1 - damping) * uniform
        if np.abs(rank - previous).sum() < n_nodes * tolerance:
            return rank
    raise RuntimeError(f"PageRank did not converge in {max_iterations} iterations (tolerance {tolerance})")


def lexrank_centrality(sentences: Sequence[str]) -> np.ndarray:
    """[N] each sentence's PageRank in the tf-idf cosine graph of ``sentences`` times N, rounded to
    :data:`LEXRANK_TIE_DECIMALS`."""
    if not sentences:
        return np.zeros(0)
    return np.round(pagerank(tfidf_cosine(sentences)) * len(sentences), LEXRANK_TIE_DECIMALS)


def lexrank_order(sentences: Sequence[str]) -> list[int]:
    """Sentence indices by decreasing LexRank centrality (ties: source order)."""
    return np.argsort(-lexrank_centrality(sentences), kind="stable").tolist()


def lexrank(example: Example) -> str:
    """The most central source sentences up to the first reference's length in words, in source order."""
    sentences = source_sentences(example)
    budget = len(example.references[0].split())
    chosen, length = [], 0
    for index in lexrank_order(sentences):
        if length >= budget:
            break
        chosen.append(index)
        length += len(sentences[index].split())
    words = " ".join(sentences[i] for i in sorted(chosen)).split()
    return " ".join(words[:budget])


BASELINE_FUNCTIONS: dict[str, Callable[[Example], str]] = {"lead": lead, "lead3": lead3, "oracle": oracle,
                                                       "lexrank": lexrank}


def baseline_summaries(name: str, examples: Sequence[Example]) -> list[str]:
    """The ``name`` baseline's output for each example (which must have a reference)."""
    if name not in BASELINE_FUNCTIONS:
        raise ValueError(f"unknown baseline {name!r}: expected one of {', '.join(BASELINES)}")
    for example in examples:
        if not example.references:
            raise ValueError(f"example {example.id!r}: baselines need a reference summary, found none")
    return [BASELINE_FUNCTIONS[name](example) for example in examples]
