"""The documentation pages that messages and help pages point users to exist (``make docs`` checks the
links inside the site; these are the pointers from outside it)."""

from __future__ import annotations

import re

import pytest

from hiersum.data.formats.inputs import INPUTS_DOCS
from hiersum.data.schema import DATA_DOCS, RecordError
from tests.helpers.paths import PROJECT_ROOT

POINTER = re.compile(r"docs/[\w-]+\.md(?:#[\w-]+)?")


def check_pointer(pointer: str) -> None:
    """``docs/page.md`` exists and, with ``#anchor``, has a heading whose slug is the anchor."""
    page, _, anchor = pointer.partition("#")
    path = PROJECT_ROOT / page
    assert path.is_file(), pointer
    if anchor:
        headings = re.findall(r"^#+ (.+)$", path.read_text(encoding="utf-8"), flags=re.MULTILINE)
        slugs = {re.sub(r"[^\w\- ]", "", heading).strip().lower().replace(" ", "-") for heading in headings}
        assert anchor in slugs, pointer


@pytest.mark.parametrize("pointer", [DATA_DOCS, INPUTS_DOCS])
def test_the_pages_errors_point_to_exist(pointer):
    check_pointer(pointer)


def test_a_record_error_points_to_the_formats_page_and_its_record_does_not():
    error = RecordError("in.jsonl", 3, "documents", "expected a list of documents, found no such field")
    assert str(error) == ("in.jsonl:3: field 'documents': expected a list of documents, found no such field "
                          f"(see {DATA_DOCS})")
    assert error.as_record()["reason"] == "expected a list of documents, found no such field"


def test_every_page_a_help_page_names_exists():
    pointers = [p for help_page in sorted((PROJECT_ROOT / "conf" / "hydra" / "help").glob("*.yaml"))
                for p in POINTER.findall(help_page.read_text(encoding="utf-8"))]
    assert len(pointers) >= 7
    for pointer in pointers:
        check_pointer(pointer)
