"""``hiersum evaluate``'s entry reads the ``data`` fields of its command line with Hydra's override parser."""

from hiersum.cli.overrides import given_data_fields
from hiersum.config import LINE_LAYOUT_FIELDS


def test_every_spelling_of_a_data_override_counts_as_given():
    given = given_data_fields(["checkpoint=x.ckpt", "data.max_paragraphs=40", "+data.ranker=r.pt",
                               "++data.selection=first", "decode.beam_size=2", "data=scitldr"])
    # a preset gives the format and the line-pair layout (data=neus: its separators)
    assert given == {"max_paragraphs", "ranker", "selection", "format", *LINE_LAYOUT_FIELDS}


def test_no_data_override_gives_nothing():
    assert given_data_fields([]) == frozenset()
    assert given_data_fields(["split=dev", "data.path=/corpus"]) == {"path"}
