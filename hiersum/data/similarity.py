"""Every pair of N texts compared at once, as products of sparse term matrices (scipy): the tf-idf cosine that the
``similarity`` paragraph graph and LexRank read, and the shared-term counts of the ``discourse`` graph.

A term matrix is [N, V]: a row per text, a column per term of the texts' vocabulary. The pairs' products
``X @ X.T`` [N, N] are dense (a common word links nearly every pair), so the terms that many texts share are
multiplied as a dense block (BLAS) and only the rarer ones as sparse: :func:`pair_products`.

scipy is imported inside the functions: the commands that decode import this module (through paragraph selection)
and load scipy only when a model asks for a graph (``tests/test_layout.py``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from scipy.sparse import csr_array

_WORD = re.compile(r"\w+")

DENSE_SHARE = 1 / 25
"""A term in more than this share of the texts is multiplied in the dense block of :func:`pair_products`: there a
sparse product's cost (the square of the term's text count) passes the BLAS product's (N^2 for each column).
Measured on 10,000 Multi-News paragraphs of 100 words (2 cores): all sparse 13 s, 1/25 (214 dense columns) 2.2 s,
1/50 3.7 s, 1/100 4.1 s."""


def term_matrix(texts_terms: Sequence[Sequence[str]]) -> csr_array:
    """[N, V] float64: how often each text has each term, a column per term in order of first appearance."""
    from scipy import sparse

    vocabulary: dict[str, int] = {}
    columns = [vocabulary.setdefault(term, len(vocabulary)) for terms in texts_terms for term in terms]
    lengths = np.fromiter((len(terms) for terms in texts_terms), dtype=np.int64, count=len(texts_terms))
    rows = np.repeat(np.arange(len(texts_terms)), lengths)
    matrix = sparse.csr_array((np.ones(len(columns)), (rows, np.asarray(columns, dtype=np.int64))),
                              shape=(len(texts_terms), len(vocabulary)))
    matrix.sum_duplicates()
    return matrix


def pair_products(matrix: csr_array) -> np.ndarray:
    """``matrix @ matrix.T`` as a dense float64 [N, N]: the columns of terms in more than :data:`DENSE_SHARE` of
    the rows as a dense product, the rest as a sparse one."""
    n_texts = matrix.shape[0]
    columns = matrix.tocsc()
    common = np.diff(columns.indptr) > DENSE_SHARE * n_texts
    dense = columns[:, np.flatnonzero(common)].toarray()  # [N, common terms]
    products = dense @ dense.T
    rare = columns[:, np.flatnonzero(~common)].tocsr()
    rare_products = (rare @ rare.T).tocoo()  # each pair once: no sum is lost to a repeated index
    products[rare_products.row, rare_products.col] += rare_products.data
    return products


def tfidf_cosine(texts: Sequence[str]) -> np.ndarray:
    """[N, N] float64: the cosine similarity of the texts' tf-idf vectors, 0 on the diagonal and for an empty
    text.

    Terms: the lowercased words (``\\w+``); tf: the raw count; idf over the N texts themselves, smoothed:
    ``log((1 + N) / (1 + df)) + 1``, so that no corpus statistics are needed."""
    counts = term_matrix([_WORD.findall(text.lower()) for text in texts])
    document_frequency = np.bincount(counts.indices, minlength=counts.shape[1])
    idf = np.log((1 + len(texts)) / (1 + document_frequency)) + 1
    counts.data *= idf[counts.indices]
    rows = np.repeat(np.arange(len(texts)), np.diff(counts.indptr))  # the row of each stored value
    norms = np.sqrt(np.bincount(rows, weights=counts.data**2, minlength=len(texts)))
    counts.data /= norms[rows]  # an empty text has no stored value, so no zero norm divides
    cosine = pair_products(counts)
    np.fill_diagonal(cosine, 0.0)
    return cosine
