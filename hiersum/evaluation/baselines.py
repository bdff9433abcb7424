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
    in source order. n-grams and scores come from rouge-score (its stemming tokenizer, its n-gram counts and
    scores: :func:`hiersum.private_apis.rouge_ngrams`, :func:`~hiersum.private_apis.rouge_ngram_score`), so the
    objective is exactly rouge-score's.
``lexrank``
    LexRank (Erkan & Radev 2004, continuous version): PageRank (networkx, damping 0.85) over the
    graph of tf-idf cosine similarities between the source sentences
    (:func:`hiersum.data.graph.similarity_graph`); the most central sentences are taken until the
    first reference's length in words is reached, put in source order and cut to that length.
    A library was preferred and none fits offline: ``sumy`` needs NLTK's punkt data for its English
    tokenizer (not installable without a download) and brings lxml/requests/breadability; the
    ``lexrank`` package is unmaintained since 2018.

Source sentences: every paragraph of every document (the title left out) split with
:func:`hiersum.evaluation.metrics.split_sentences`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

import networkx as nx

from hiersum.data.graph import similarity_graph
from hiersum.data.schema import Example
from hiersum.evaluation.metrics import lead_baseline, rouge_tokenizer, split_sentences
from hiersum.private_apis import rouge_ngram_score, rouge_ngrams

BASELINES = ("lead", "lead3", "oracle", "lexrank")
LEAD_SENTENCES = 3
"""The sentences of ``lead3``."""
ORACLE_MAX_SENTENCES = 5


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


def _ngram_counts(tokens: Sequence[str]) -> tuple[Counter, Counter]:
    return rouge_ngrams(tokens, 1), rouge_ngrams(tokens, 2)


def oracle(example: Example, *, max_sentences: int = ORACLE_MAX_SENTENCES) -> str:
    """Greedy selection of source sentences maximizing (ROUGE-1 F1 + ROUGE-2 F1) / 2."""
    tokenizer = rouge_tokenizer()  # the stemming tokenizer ROUGE is computed with
    sentences = source_sentences(example)
    sentence_grams = [_ngram_counts(tokenizer.tokenize(s)) for s in sentences]
    reference_grams = [_ngram_counts(tokenizer.tokenize(r)) for r in example.references]

    def objective(unigrams: Counter, bigrams: Counter) -> float:
        return max(
            (rouge_ngram_score(ref_uni, unigrams).fmeasure + rouge_ngram_score(ref_bi, bigrams).fmeasure) / 2
            for ref_uni, ref_bi in reference_grams
        )

    selected: list[int] = []
    unigrams, bigrams, best = Counter(), Counter(), 0.0
    while len(selected) < max_sentences:
        candidates = [
            (objective(unigrams + uni, bigrams + bi), i)
            for i, (uni, bi) in enumerate(sentence_grams) if i not in selected
        ]
        if not candidates:
            break
        score, index = max(candidates, key=lambda candidate: (candidate[0], -candidate[1]))
        if score <= best:
            break
        best = score
        selected.append(index)
        unigrams += sentence_grams[index][0]
        bigrams += sentence_grams[index][1]
    return " ".join(sentences[i] for i in sorted(selected))


def lexrank_order(sentences: Sequence[str]) -> list[int]:
    """Sentence indices by decreasing LexRank centrality (ties: source order)."""
    graph = nx.Graph()
    graph.add_nodes_from(range(len(sentences)))
    weights = similarity_graph(sentences)
    graph.add_weighted_edges_from(
        (i, j, weights[i][j]) for i in range(len(sentences)) for j in range(i + 1, len(sentences)) if weights[i][j] > 0
    )
    rank = nx.pagerank(graph, alpha=0.85, weight="weight")
    return sorted(range(len(sentences)), key=lambda i: (-rank[i], i))


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
