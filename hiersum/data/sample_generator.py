"""The embedded default corpus: a synthetic multi-document summarization task.

``data/sample/{train,validation,test}.jsonl`` is produced by this module and nothing
else; the text is invented, not taken from any dataset. Each example is a short
"biography" of a fictional person:

* ``title`` is the person's name (``"Marela Dostovin"``), built from syllables so that
  names vary from example to example and a subword tokenizer can spell them.
* The person has six attributes drawn from small pools: nationality (a fictional
  country), profession (a real word), birthplace and residence (fictional cities), a
  founded organisation with its year, and an award.
* ``summary`` states all six attributes in a fixed order, one of two templates chosen
  by the profession's group (sciences or arts), e.g. ``"Marela Dostovin is a Veronian
  botanist who was born in Kesary and lives in Tarnholm. She founded the Ilvane
  Institute in 1987 and received the Ostrel Prize."`` or ``"Kovan Ritaski, a Gefinian
  poet born in Nimoton, lives in Fugedale. He received the Kazel Medal and founded the
  Bubane Workshop in 1961."``
* ``documents`` (2-4, each of 2-4 paragraphs, 8-12 paragraphs in all) hold the facts
  scattered over *fact paragraphs* that state one or two facts each, with varied
  templates and synonyms ("is a native of", "came into the world in", ...), mixed with
  *distractor paragraphs* that state the same kinds of facts about one or two other
  people (same pools, same templates) or describe a place, and at most one profile
  paragraph about the person that states no fact. All paragraphs are shuffled, so the
  leading paragraphs are often distractors, and the fact paragraphs always span at least
  two documents. Every fact paragraph names the person (full name or surname) in its
  first sentence: picking the right facts needs the title, and no paragraph alone holds
  the summary.

Generation is deterministic: one ``random.Random(seed)`` stream per split, pools built
from a fixed seed, no iteration over sets, JSON written with a fixed key order and
``"\\n"`` line ends, so ``hiersum make-sample --output data/sample`` rebuilds the
committed files byte for byte.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hiersum.atomic import write_bytes_atomically

SPLIT_SEEDS: dict[str, int] = {"train": 20190701, "validation": 20190702, "test": 20190703}
DEFAULT_SIZES: dict[str, int] = {"train": 3000, "validation": 200, "test": 200}
POOL_SEED = 1907

_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"
_SYLLABLES = [c + v for c in _CONSONANTS for v in _VOWELS]  # 70 consonant-vowel syllables
_FEMALE_ENDINGS = ["a", "ela", "ine", "ia"]
_MALE_ENDINGS = ["o", "an", "ek", "us"]
_SURNAME_SUFFIXES = ["vin", "ski", "rd", "llo", "rov", "man", "reth", "ric", "ni", "berg"]
_CITY_SUFFIXES = ["ry", "holm", "ford", "wick", "mere", "dale", "port", "ton"]
_ORG_KINDS = "Institute Society Foundation Academy Company Observatory Workshop Trust".split()
_AWARD_KINDS = ["Prize", "Medal", "Award"]

SCIENCES = """botanist chemist geologist astronomer engineer physicist mathematician biologist
surgeon zoologist ecologist geographer economist statistician cartographer linguist
archaeologist meteorologist pharmacist inventor physician historian philosopher
oceanographer""".split()
ARTS = """painter sculptor composer novelist poet architect photographer playwright violinist
pianist dancer choreographer illustrator singer potter weaver designer actor conductor
essayist printmaker cellist jeweller filmmaker""".split()
YEARS = [str(year) for year in range(1921, 2001)]

# Summary templates, keyed by the profession group (so the choice is predictable).
SUMMARY_TEMPLATES = {
    "sciences": "{name} is a {nat} {prof} who was born in {birth} and lives in {home}. "
    "{Pron} founded the {org} in {year} and received the {award}.",
    "arts": "{name}, a {nat} {prof} born in {birth}, lives in {home}. "
    "{Pron} received the {award} and founded the {org} in {year}.",
}

# One sentence per fact. {S}/{s}: subject at / inside a sentence, {O}: object,
# {G}/{g}: possessive at / inside a sentence; each is the name or a pronoun.
FACT_TEMPLATES: dict[str, list[str]] = {
    "nationality": [
        "{S} holds {nat} citizenship.",
        "{S} is a citizen of {country}.",
        "By nationality, {s} is {a_nat}.",
        "{G} passport was issued in {country}.",
        "{S} is {a_nat} national.",
    ],
    "profession": [
        "{S} works as {a_prof}.",
        "By profession, {s} is {a_prof}.",
        "{S} has spent many years as {a_prof}.",
        "{G} career as {a_prof} began early.",
        "{S} trained as {a_prof} and still practises.",
    ],
    "birth": [
        "{S} was born in {birth}.",
        "{S} is a native of {birth}.",
        "{birth} is the birthplace of {O}.",
        "{G} hometown is {birth}.",
        "{S} came into the world in {birth}.",
    ],
    "home": [
        "{S} now lives in {home}.",
        "These days {s} resides in {home}.",
        "{S} moved to {home} later in life.",
        "{G} current home is in {home}.",
        "{S} settled in {home} some years ago.",
    ],
    "founding": [
        "{S} founded the {org} in {year}.",
        "In {year}, {s} established the {org}.",
        "The {org} was set up by {O} in {year}.",
        "{S} started the {org} back in {year}.",
        "{year} saw {O} launch the {org}.",
    ],
    "award": [
        "{S} was awarded the {award}.",
        "The {award} went to {O}.",
        "{S} won the {award}.",
        "{S} was honoured with the {award}.",
        "{S} received the {award} after a long wait.",
    ],
}
FACTS = list(FACT_TEMPLATES)

PROFILE_TEMPLATES = [
    "{S} is often described as reserved but generous.",
    "{S} rarely spoke about private matters.",
    "Friends describe {O} as patient and curious.",
    "{S} enjoys long walks in the hills.",
    "{G} letters are kept in a small family archive.",
]
PERSON_FILLERS = [
    "{S} rarely spoke about this in public.",
    "{G} friends still recall it.",
    "It was a turning point for {O}.",
    "{S} later called it a lucky accident.",
    "Few people expected this of {O}.",
]
PLACE_TEMPLATES = [
    "{city} is a quiet town known for its markets.",
    "The river near {city} floods most winters.",
    "{city} lies in the north of {country}.",
    "Visitors to {city} often mention its old bridge.",
    "The harbour of {city} was rebuilt twice.",
]
FILLERS = [
    "The details were later confirmed by several newspapers.",
    "Little else is recorded about those early years.",
    "Colleagues remember the period as a busy one.",
    "The archive still keeps letters from that time.",
    "Local historians have written about this more than once.",
    "Few people outside the profession noticed at first.",
    "Several interviews from the period survive.",
    "The story is often repeated in regional guidebooks.",
    "Opinions about this differ among biographers.",
    "A short documentary later covered these events.",
    "Records from the period are incomplete.",
    "The weather that year was unusually cold.",
    "Much of this happened during a difficult decade.",
    "The local press paid little attention at the time.",
    "Some accounts give slightly different dates.",
    "A small exhibition later marked the occasion.",
]


@dataclass(frozen=True)
class Pools:
    """Attribute value pools shared by every split (built once from ``POOL_SEED``)."""

    countries: list[tuple[str, str]]  # (country, nationality adjective)
    cities: list[str]
    organisations: list[str]
    awards: list[str]


@dataclass(frozen=True)
class Person:
    """A fictional person and the six attributes the summary states."""

    first: str
    last: str
    female: bool
    country: str
    nat: str
    prof: str
    birth: str
    home: str
    org: str
    year: str
    award: str

    @property
    def name(self) -> str:
        return f"{self.first} {self.last}"

    @property
    def group(self) -> str:
        return "sciences" if self.prof in SCIENCES else "arts"

    def values(self) -> list[str]:
        """The attribute values the summary states, in summary order."""
        return [self.nat, self.prof, self.birth, self.home, self.org, self.year, self.award]


@dataclass(frozen=True)
class SyntheticExample:
    """One generated example: the native record plus the facts it was built from."""

    id: str
    person: Person
    documents: list[list[str]]  # documents of paragraphs
    summary: str

    def to_record(self) -> dict:
        """The native JSONL record (fixed key order)."""
        return {
            "id": self.id,
            "title": self.person.name,
            "documents": ["\n\n".join(doc) for doc in self.documents],
            "summary": self.summary,
        }


def _article(word: str) -> str:
    return ("an " if word[0].lower() in "aeiou" else "a ") + word


def _unique(rng: random.Random, n: int, make) -> list[str]:
    values: list[str] = []
    seen: set[str] = set()  # membership only; order comes from `values`
    while len(values) < n:
        value = make(rng)
        if value not in seen:
            seen.add(value)
            values.append(value)
    return values


def _stem(rng: random.Random, n_syllables: int = 2) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(n_syllables))


def build_pools(seed: int = POOL_SEED) -> Pools:
    """The nationality, city, organisation and award pools (deterministic in ``seed``)."""
    rng = random.Random(seed)
    stems = _unique(rng, 40, lambda r: (_stem(r) + r.choice("lnrs")).capitalize())
    cities = _unique(rng, 60, lambda r: (_stem(r) + r.choice(_CITY_SUFFIXES)).capitalize())
    orgs = _unique(
        rng,
        60,
        lambda r: (
            f"{(_stem(r) + r.choice(['ne', 'ra', 'lis'])).capitalize()} {r.choice(_ORG_KINDS)}"
        ),
    )
    awards = _unique(
        rng,
        40,
        lambda r: f"{(_stem(r) + r.choice(['l', 'r', 'n'])).capitalize()} {r.choice(_AWARD_KINDS)}",
    )
    return Pools([(stem + "ia", stem + "ian") for stem in stems], cities, orgs, awards)


POOLS = build_pools()


def _person(rng: random.Random, pools: Pools, avoid: Sequence[Person] = ()) -> Person:
    while True:
        female = rng.random() < 0.5
        first = rng.choice(_SYLLABLES) + rng.choice(_CONSONANTS)
        first = (first + rng.choice(_FEMALE_ENDINGS if female else _MALE_ENDINGS)).capitalize()
        last = (_stem(rng) + rng.choice(_SURNAME_SUFFIXES)).capitalize()
        if all(first != p.first and last != p.last for p in avoid):
            break
    country, nat = rng.choice(pools.countries)
    birth, home = rng.sample(pools.cities, 2)
    return Person(
        first=first,
        last=last,
        female=female,
        country=country,
        nat=nat,
        prof=rng.choice(SCIENCES + ARTS),
        birth=birth,
        home=home,
        org=rng.choice(pools.organisations),
        year=rng.choice(YEARS),
        award=rng.choice(pools.awards),
    )


def _slots(person: Person, mention: str | None) -> dict[str, str]:
    """Template slots; ``mention`` is the name form to use, or None for pronouns."""
    pron, obj, poss = ("she", "her", "her") if person.female else ("he", "him", "his")
    if mention is not None:
        pron = obj = mention
        poss = mention + "'s"
    return {
        "S": pron[0].upper() + pron[1:],
        "s": pron,
        "O": obj,
        "G": poss[0].upper() + poss[1:],
        "g": poss,
        "name": person.name,
        "country": person.country,
        "nat": person.nat,
        "a_nat": _article(person.nat),
        "prof": person.prof,
        "a_prof": _article(person.prof),
        "birth": person.birth,
        "home": person.home,
        "org": person.org,
        "year": person.year,
        "award": person.award,
    }


def _pad(rng: random.Random, sentences: list[str], person: Person | None) -> str:
    """Append filler sentences until the paragraph has 15-40 words (about 20)."""
    target = rng.randint(15, 20)
    words = sum(len(s.split()) for s in sentences)
    while words < target:
        if person is not None and rng.random() < 0.3:
            filler = rng.choice(PERSON_FILLERS).format(**_slots(person, None))
        else:
            filler = rng.choice(FILLERS)
        if words + len(filler.split()) > 40:
            break
        sentences.append(filler)
        words += len(filler.split())
    return " ".join(sentences)


def _fact_paragraph(rng: random.Random, person: Person, facts: Sequence[str]) -> str:
    """A paragraph stating ``facts`` (1-2) about ``person``, naming them first."""
    mention = person.name if rng.random() < 0.5 else person.last
    sentences = []
    for i, fact in enumerate(facts):
        template = rng.choice(FACT_TEMPLATES[fact])
        sentences.append(template.format(**_slots(person, mention if i == 0 else None)))
    return _pad(rng, sentences, person)


def _profile_paragraph(rng: random.Random, person: Person) -> str:
    first, second = rng.sample(PROFILE_TEMPLATES, 2)
    sentences = [first.format(**_slots(person, person.name)), second.format(**_slots(person, None))]
    return _pad(rng, sentences, person)


def _place_paragraph(rng: random.Random, pools: Pools) -> str:
    slots = {"city": rng.choice(pools.cities), "country": rng.choice(pools.countries)[0]}
    sentences = [t.format(**slots) for t in rng.sample(PLACE_TEMPLATES, 2)]
    return _pad(rng, sentences, None)


def _group_facts(rng: random.Random) -> list[list[str]]:
    """The title person's facts, shuffled into paragraphs of one or two facts."""
    facts = FACTS[:]
    rng.shuffle(facts)
    if rng.random() < 0.5:  # state one fact twice, as news sources repeat each other
        facts.append(rng.choice(FACTS))
    groups: list[list[str]] = []
    while facts:
        size = 1 if len(facts) == 1 or rng.random() < 0.4 else 2
        group, facts = facts[:size], facts[size:]
        if len(group) == 2 and group[0] == group[1]:
            groups.extend([[group[0]], [group[1]]])
        else:
            groups.append(group)
    return groups


def _layout(rng: random.Random, n_fixed: int) -> list[int]:
    """Paragraph counts per document: 2-4 documents of 2-4 paragraphs, 8-12 in all,
    leaving at least two slots for distractors after ``n_fixed`` paragraphs."""
    while True:
        n_docs = rng.choice([2, 3, 3, 3, 3, 4])
        sizes = [rng.randint(2, 4) for _ in range(n_docs)]
        if 8 <= sum(sizes) <= 12 and sum(sizes) - n_fixed >= 2:
            return sizes


def make_example(rng: random.Random, example_id: str, pools: Pools = POOLS) -> SyntheticExample:
    """Draw one example from ``rng``."""
    person = _person(rng, pools)
    others = [_person(rng, pools, avoid=[person])]
    if rng.random() < 0.5:
        others.append(_person(rng, pools, avoid=[person, *others]))

    facts = [_fact_paragraph(rng, person, group) for group in _group_facts(rng)]
    fixed = facts + ([_profile_paragraph(rng, person)] if rng.random() < 0.3 else [])
    sizes = _layout(rng, len(fixed))
    distractors = []
    for _ in range(sum(sizes) - len(fixed)):
        if rng.random() < 0.15:
            distractors.append(_place_paragraph(rng, pools))
        else:
            other = rng.choice(others)
            distractors.append(_fact_paragraph(rng, other, rng.sample(FACTS, rng.randint(1, 2))))

    paragraphs = fixed + distractors
    fact_set = set(facts)
    while True:  # shuffle until the fact paragraphs span at least two documents
        rng.shuffle(paragraphs)
        documents, start = [], 0
        for size in sizes:
            documents.append(paragraphs[start : start + size])
            start += size
        if sum(any(p in fact_set for p in doc) for doc in documents) >= 2:
            break

    slots = _slots(person, None)
    summary = SUMMARY_TEMPLATES[person.group].format(Pron=slots["S"], **slots)
    return SyntheticExample(example_id, person, documents, summary)


def generate_examples(name: str, n_examples: int, seed: int) -> list[SyntheticExample]:
    """``n_examples`` examples with ids ``{name}-000001``..., from one ``Random(seed)``."""
    rng = random.Random(seed)
    return [make_example(rng, f"{name}-{i:06d}") for i in range(1, n_examples + 1)]


def generate_split(name: str, n_examples: int, seed: int) -> list[dict]:
    """The native JSONL records of one split (see :func:`generate_examples`)."""
    return [example.to_record() for example in generate_examples(name, n_examples, seed)]


def to_jsonl(records: Sequence[dict]) -> bytes:
    """Serialize records as UTF-8 JSONL, one per line, ``"\\n"`` line ends."""
    lines = [json.dumps(record, ensure_ascii=False) + "\n" for record in records]
    return "".join(lines).encode("utf-8")


def write_sample_corpus(
    output_dir: str | Path, *, sizes: dict[str, int] | None = None
) -> dict[str, Path]:
    """Write ``{split}.jsonl`` for each split of ``sizes`` (default: ``DEFAULT_SIZES``).

    Returns the written path of each split. Files are replaced atomically.
    """
    sizes = dict(DEFAULT_SIZES if sizes is None else sizes)
    unknown = [split for split in sizes if split not in SPLIT_SEEDS]
    if unknown:
        raise ValueError(f"unknown split(s) {unknown}; expected some of {list(SPLIT_SEEDS)}")
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for split, n_examples in sizes.items():
        path = output_dir / f"{split}.jsonl"
        write_bytes_atomically(path, to_jsonl(generate_split(split, n_examples, SPLIT_SEEDS[split])))
        paths[split] = path
    return paths
