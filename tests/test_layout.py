"""The package's dependency direction, read from the source with ``ast`` (no import is executed).

errors <- {config, registry} <- data <- model <- checkpoints <- decoding <- inference <- {training, evaluation} <-
commands <- serving <- cli: a module imports only from its own stage or the stages left of it; training and
evaluation never import each other; Lightning is imported only by ``hiersum/training/`` and the datamodule; Hydra
and OmegaConf only by commands/, serving/ and cli/ (and Hydra's ``instantiate`` by training/); decoding knows no
checkpoints. ``private_apis`` (every private API of another library, fenced) sits below every stage and may import
any library, each inside the function that uses it.
Within a stage too, the imports draw no circle (:func:`test_the_imports_draw_no_circle`, which counts the imports
inside functions as well). ``atomic``, ``allocator`` and ``private_apis``, like ``errors``, import nothing of hiersum.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "hiersum"

STAGES = {"errors": -1, "atomic": -1, "allocator": -1, "private_apis": -1, "config": 0, "registry": 0, "data": 1,
          "model": 2, "checkpoints": 3, "decoding": 4, "inference": 5, "training": 6, "evaluation": 6, "commands": 7,
          "serving": 8, "cli": 9}
"""Stage of each sub-package (or top-level module); a module may import stages <= its own."""
ALIASES = {"__main__": "cli"}
"""Top-level modules that are no stage of their own: ``__main__`` is the command."""
LIGHTNING = ("pytorch_lightning", "lightning")
LIGHTNING_USERS = ("hiersum.training", "hiersum.data.datamodule")
HYDRA = ("hydra", "omegaconf")
HYDRA_STAGE = "commands"
"""Hydra and OmegaConf are imported from this stage on (commands, serving, cli): the stages below it receive typed
configs (:mod:`hiersum.config`, which imports neither)."""
INSTANTIATE = ("hiersum.training", "hydra.utils")
"""The one exception: training builds the Trainer, its callbacks and loggers and the optimizer from their
``_target_`` nodes with ``hydra.utils.instantiate`` (a checkpoint's optimizer node is rebuilt the same way)."""
FENCE = "hiersum.private_apis"
"""The one module that touches private APIs of other libraries: it imports each library inside the function that
uses it, so that importing it loads none (``tests/test_private_apis.py``), and the rules of which stages import
Lightning, Hydra and OmegaConf do not apply to it."""
FORBIDDEN = {"hiersum.decoding": ("omegaconf", "hydra", "hiersum.checkpoints", "hiersum.data.batching",
                                  "hiersum.data.selection"),
             "hiersum.serving": ("hiersum.commands",)}
"""Imports a package may not make even where the dependency direction allows them: decoding receives
tensors and search settings, never a config node or a checkpoint, and batches no records and selects no
paragraphs (:mod:`hiersum.inference` and the commands do); serving answers with the record-to-line logic
of :mod:`hiersum.inference`, never with a command's internals."""
WHY_FORBIDDEN = {"hiersum.decoding": "it batches no records and selects no paragraphs",
                 "hiersum.serving": "what it shares with a command lives below commands/"}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def stage_of(module: str) -> str | None:
    """``hiersum.data.schema`` -> ``data``; None for the package root and non-hiersum modules."""
    parts = module.split(".")
    if parts[0] != "hiersum" or len(parts) < 2:
        return None
    return ALIASES.get(parts[1], parts[1])


def imported_modules(source: str, module: str) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in ``source``, at any depth (function-level too)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the importing module's package
                base = module.split(".")[: -node.level]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            found.append((node.lineno, name))
    return found


def violations(source: str, module: str) -> list[str]:
    """What breaks the layout rules in ``source`` (the text of hiersum module ``module``)."""
    problems = []
    own = stage_of(module)
    for line, name in imported_modules(source, module):
        fenced = module == FENCE
        if name.split(".")[0] in LIGHTNING and not module.startswith(LIGHTNING_USERS) and not fenced:
            problems.append(f"{module}:{line} imports {name}: Lightning is for training/ and the datamodule only")
        for package, forbidden in FORBIDDEN.items():
            if module.startswith(package) and name.startswith(forbidden):
                problems.append(f"{module}:{line} imports {name}: {package} imports none of {', '.join(forbidden)} "
                                f"({WHY_FORBIDDEN[package]})")
        below_hydra = own is not None and STAGES[own] < STAGES[HYDRA_STAGE]
        instantiates = module.startswith(INSTANTIATE[0]) and name.startswith(INSTANTIATE[1])
        if below_hydra and name.split(".")[0] in HYDRA and not instantiates and not fenced:
            problems.append(f"{module}:{line} imports {name}: Hydra and OmegaConf are for commands/, serving/ and cli/")
        target = stage_of(name)
        if own is None or target is None or target == own:
            continue
        if STAGES[target] >= STAGES[own]:  # a later stage, or the sibling (training vs evaluation)
            problems.append(f"{module}:{line} ({own}) imports {name} ({target}), against the dependency direction")
    return problems


def import_targets(source: str, module: str, modules: set[str]) -> set[str]:
    """The hiersum modules (of ``modules``) that ``source``, the text of ``module``, imports, at any depth:
    ``from P import N`` is module ``P.N`` when there is one, else ``P`` (a package's ``__init__``)."""
    package = module if module in PACKAGES else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: against the importing module's package
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([node.module] if node.module else []))
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        for name in names:
            while name not in modules and "." in name:  # import a.b.c of a module a.b: its attribute c
                name = name.rpartition(".")[0]
            if name in modules and name != module:
                found.add(name)
    return found


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One circle ``[a, b, ..., a]`` through every group of modules that import each other (a depth-first
    search: each edge back to a module still on the path closes a circle), in a stable order."""
    found, done, path = [], set(), []

    def visit(node: str) -> None:
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if target in path:
                found.append(path[path.index(target):] + [target])
            elif target not in done:
                visit(target)
        path.pop()
        done.add(node)

    for node in sorted(graph):
        if node not in done:
            visit(node)
    return found


def package_modules() -> list[Path]:
    return sorted(p for p in PACKAGE_DIR.rglob("*.py") if "conf" not in p.relative_to(PACKAGE_DIR).parts)


PACKAGES = {module_name(p) for p in PACKAGE_DIR.rglob("__init__.py")}


def test_the_imports_draw_no_circle():
    """No hiersum module imports, directly or through others, a module that imports it. Every import counts,
    module-level or inside a function (and under ``if TYPE_CHECKING:``): an import deferred into a function
    hides a circle from the interpreter, not from the reader, so a circle cannot be broken by moving an import
    into a function. A module reached through ``importlib`` (an action's entry module, which
    :mod:`hiersum.cli.main` imports by name) is no import. Python's own import of a package's ``__init__``
    before its modules is no arrow either: ``from hiersum.x import N`` of a name ``N`` defined in (or
    re-exported by) ``hiersum/x/__init__.py`` is."""
    paths = {module_name(path): path for path in package_modules()}
    modules = set(paths)
    graph = {module: import_targets(path.read_text(encoding="utf-8"), module, modules)
             for module, path in paths.items()}
    assert sum(map(len, graph.values())) > 200, "the import graph is read"
    assert [" -> ".join(circle) for circle in circles(graph)] == []


@pytest.mark.parametrize(
    ("sources", "expected"),
    [
        ({"hiersum.checkpoints.io": "def load():\n    from hiersum.checkpoints.directory import load_model_directory",
          "hiersum.checkpoints.directory": "from hiersum.checkpoints.io import CheckpointError"},
         [["hiersum.checkpoints.directory", "hiersum.checkpoints.io", "hiersum.checkpoints.directory"]]),
        ({"hiersum.data": "from hiersum.data.schema import Example",
          "hiersum.data.schema": "from hiersum.data.tokenizer import SubwordTokenizer",
          "hiersum.data.tokenizer": "from hiersum.data import Example"},
         [["hiersum.data", "hiersum.data.schema", "hiersum.data.tokenizer", "hiersum.data"]]),
        ({"hiersum.data.schema": "from . import tokenizer", "hiersum.data.tokenizer": "from .schema import Example"},
         [["hiersum.data.schema", "hiersum.data.tokenizer", "hiersum.data.schema"]]),
        ({"hiersum.data.schema": "import hiersum.data.tokenizer.SubwordTokenizer",
          "hiersum.data.tokenizer": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                    "    from hiersum.data.schema import Example"},
         [["hiersum.data.schema", "hiersum.data.tokenizer", "hiersum.data.schema"]]),
        ({"hiersum.data.schema": "from hiersum.data import tokenizer", "hiersum.data.tokenizer": "import json",
          "hiersum.data": "import importlib\nimportlib.import_module('hiersum.data.schema')"}, []),
    ],
    ids=["inside-a-function", "through-a-package-init", "relative", "type-checking", "none"],
)
def test_the_checker_finds_a_circle(sources, expected):
    modules = {"hiersum.data", "hiersum.data.schema", "hiersum.data.tokenizer", *sources}
    graph = {module: import_targets(source, module, modules) for module, source in sources.items()}
    assert circles(graph) == expected


def test_every_stage_is_known():
    stages = {stage_of(module_name(path)) for path in package_modules()} - {None}
    assert stages <= set(STAGES), stages - set(STAGES)
    assert {"config", "data", "model", "checkpoints", "decoding", "training", "evaluation", "commands", "cli"} <= stages


@pytest.mark.parametrize("path", package_modules(), ids=lambda p: str(p.relative_to(PACKAGE_DIR)))
def test_imports_follow_the_dependency_direction(path):
    assert violations(path.read_text(encoding="utf-8"), module_name(path)) == []


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        ("hiersum.model.summarizer", "from hiersum.decoding.search import beam_search", "against the dependency"),
        ("hiersum.model.summarizer", "def f():\n    import hiersum.decoding.generation", "against the dependency"),
        ("hiersum.evaluation.split", "from hiersum.training.module import HierSumModule", "against the dependency"),
        ("hiersum.training.module", "from hiersum.evaluation import metrics", "against the dependency"),
        ("hiersum.data.batching", "from ..model.encoder import HierarchicalEncoder", "against the dependency"),
        ("hiersum.evaluation.split", "import pytorch_lightning as pl", "Lightning is for training/"),
        ("hiersum.checkpoints.io", "from lightning.pytorch import Trainer", "Lightning is for training/"),
        ("hiersum.config.model", "from omegaconf import MISSING", "Hydra and OmegaConf are for"),
        ("hiersum.data.selection", "def f():\n    from omegaconf import OmegaConf", "Hydra and OmegaConf are for"),
        ("hiersum.training.fit", "from omegaconf import DictConfig", "Hydra and OmegaConf are for"),
        ("hiersum.evaluation.split", "from hydra.utils import instantiate", "Hydra and OmegaConf are for"),
        ("hiersum.decoding.generation", "from hiersum.checkpoints.io import load_network", "imports none of"),
        ("hiersum.decoding.generation", "from hiersum.inference import summarize_encoded", "against the dependency"),
        ("hiersum.decoding.generation", "from hiersum.data.batching import collate", "batches no records"),
        ("hiersum.commands.summarize", "from hiersum.cli.common import task", "against the dependency"),
        ("hiersum.serving.api", "from hiersum.commands.summarize import summarize", "lives below commands/"),
        ("hiersum.serving.server", "def f():\n    from hiersum.commands import common", "imports none of"),
    ],
)
def test_the_checker_catches_a_wrong_arrow(module, source, expected):
    [problem] = violations(source, module)
    assert expected in problem and module in problem


def test_the_checker_allows_the_right_arrows():
    assert violations("from hiersum.model.summarizer import HierSum\nfrom hiersum.config import DecodeConfig",
                      "hiersum.decoding.generation") == []
    assert violations("import pytorch_lightning as pl", "hiersum.data.datamodule") == []
    assert violations("from hiersum.training.fit import fit\nfrom hiersum.evaluation.split import evaluate_split",
                      "hiersum.commands.train") == []
    assert violations("from hiersum.commands.train import train", "hiersum.cli.train") == []
    assert violations("from hydra.utils import instantiate", "hiersum.training.fit") == []
    assert violations("from omegaconf import OmegaConf", "hiersum.commands.composed") == []
    assert violations("def f():\n    from pytorch_lightning.strategies import launchers\n    from omegaconf import "
                      "DictConfig", FENCE) == []
    assert violations("from hiersum.errors import UsageError", FENCE) != []


def loaded_libraries(modules: list[str], libraries: set[str]) -> list[str]:
    """Which of ``libraries`` importing ``modules`` in a fresh interpreter loads."""
    code = f"import sys, {', '.join(modules)}; print(sorted({{m.split('.')[0] for m in sys.modules}} & {libraries!r}))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return ast.literal_eval(result.stdout)


def test_decoding_and_the_configs_load_no_hydra_omegaconf_or_lightning():
    """``import hiersum.decoding`` (and the schemas it reads) in a fresh interpreter loads none of them."""
    assert loaded_libraries(["hiersum.decoding", "hiersum.config.decode", "hiersum.config.summarize"],
                            {"hydra", "omegaconf", "pytorch_lightning", "lightning", "lightning_fabric"}) == []


def test_summarize_and_rank_load_no_nltk_or_scipy():
    """The commands that decode or rank (their processes: every shard job, every test that runs one) import
    neither nltk nor the scipy its package imports (1-2 s of each start): only splitting sentences and ROUGE do."""
    assert loaded_libraries(["hiersum.commands.summarize", "hiersum.commands.rank"],
                            {"nltk", "scipy", "rouge_score"}) == []


def test_importing_the_fence_loads_no_library():
    """``hiersum.private_apis`` imports every library inside the function that uses it: importing it loads none
    (so that every stage may import it)."""
    assert loaded_libraries([FENCE], {"torch", "pytorch_lightning", "lightning_fabric", "omegaconf", "hydra",
                                      "rouge_score", "sacrebleu", "litserve", "huggingface_hub"}) == []


TEST_HELPERS = "helpers"
"""``tests/helpers/``: what the tests share (no tests of its own), beside the folders that mirror the stages."""
TEST_SCRIPTS = "scripts"
"""``tests/scripts/``: the tests of ``scripts/`` (benchmarks and one-off tools), which are no stage."""


def test_the_tests_mirror_the_stages():
    """``tests/<stage>/`` for every sub-package; package-wide tests (config, layout, packaging) at the top;
    the shared helpers in ``tests/helpers/``, the tests of ``scripts/`` in ``tests/scripts/``."""
    tests_dir = Path(__file__).resolve().parent
    folders = {p.name for p in tests_dir.iterdir() if (p / "__init__.py").is_file()}
    sub_packages = {p.parent.name for p in PACKAGE_DIR.glob("*/__init__.py")} - {"conf"}
    assert folders - {TEST_HELPERS, TEST_SCRIPTS} == sub_packages
    assert not list((tests_dir / TEST_HELPERS).glob("test_*.py")), "tests/helpers/ holds no tests"
    for test in tests_dir.glob("*/test_*.py"):
        unit = test.stem.removeprefix("test_")
        assert not unit.startswith(f"{test.parent.name}_"), f"{test}: the folder already names the stage"
        assert "extensions" not in unit, f"{test}: name a test file after the unit it tests"
