"""docs/extending.md's "Files to touch" stays true: every file it lists exists (the folder, for a file named after
the new thing), the registries and the table of actions are where it says, the built-in actions follow it, and no
other module of the package lists the actions or compares an encoder's or decoder's name."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from hiersum.cli.actions import ACTIONS
from hiersum.model import decoder_registry, encoder_registry
from tests.helpers.cli import console_scripts
from tests.helpers.paths import PROJECT_ROOT

DOC = PROJECT_ROOT / "docs" / "extending.md"


def files_to_touch() -> dict[str, list[str]]:
    """The lists of the doc's "Files to touch" section: ``{"action": [path, ...], "encoder": ..., ...}``."""
    section = DOC.read_text(encoding="utf-8").split("## Files to touch", 1)[1].split("\n## ", 1)[0]
    lists: dict[str, list[str]] = {}
    parts = re.split(r"^A new (\w+):\n", section, flags=re.M)
    for kind, block in zip(parts[1::2], parts[2::2], strict=True):
        lists[kind] = re.findall(r"^- `([^`]+)`", block, flags=re.M)
    return lists


def relative(path: str) -> str:
    return Path(path).resolve().relative_to(PROJECT_ROOT).as_posix()


def test_the_doc_lists_the_files_of_an_action_an_encoder_and_a_decoder():
    lists = files_to_touch()
    assert set(lists) == {"action", "encoder", "decoder"}
    assert len(lists["action"]) <= 6 and all(len(files) <= 3 for files in (lists["encoder"], lists["decoder"]))


@pytest.mark.parametrize("kind", ["action", "encoder", "decoder"])
def test_every_listed_file_exists(kind):
    """A path with ``<name>`` in it is a new file: its folder exists."""
    for path in files_to_touch()[kind]:
        target = PROJECT_ROOT / path
        assert (target.parent if "<name>" in path else target).exists(), f"docs/extending.md lists {path}"


def test_the_listed_table_and_registries_are_where_the_doc_says():
    lists = files_to_touch()
    assert relative(inspect.getfile(encoder_registry)) in lists["encoder"]
    assert relative(inspect.getfile(decoder_registry)) in lists["decoder"]
    assert "hiersum/cli/actions.py" in lists["action"]
    assert relative(inspect.getsourcefile(ACTIONS["train"].__class__)) == "hiersum/cli/actions.py"


def action_files(name: str) -> set[str]:
    """The files of the table entry of action ``name``: its function's and schema's modules, its config and help."""
    action = ACTIONS[name]
    modules = [action.function.split(":")[0], *([action.schema.split(":")[0]] if action.schema else [])]
    files = {module.replace(".", "/") + ".py" for module in modules}
    if action.config is not None:
        files |= {f"conf/{action.config}.yaml", f"conf/hydra/help/{action.config}.yaml"}
    return files


def test_a_builtin_action_is_exactly_the_listed_files():
    """``prepare`` is made as the doc says: each listed file, with <name> its name, is one of its files."""
    listed = {path.replace("<name>", "prepare") for path in files_to_touch()["action"]}
    assert action_files("prepare") | {"hiersum/cli/actions.py", "pyproject.toml"} == listed


def test_every_action_has_its_files_and_its_script():
    scripts = console_scripts()
    for name in ACTIONS:
        for path in action_files(name):
            assert (PROJECT_ROOT / path).is_file(), f"{name}: {path}"
        assert scripts[f"hiersum-{name}"] == "hiersum.cli.main:main"


def test_no_other_module_lists_the_actions():
    """The table is the one list: another module naming two actions (hyphenated, as the command line spells them)
    would be one more file to touch."""
    names = [name for name in ACTIONS if "-" in name]
    for path in (PROJECT_ROOT / "hiersum").rglob("*.py"):
        if path.name == "actions.py" and path.parent.name == "cli":
            continue
        found = {name for name in names if f'"{name}"' in path.read_text(encoding="utf-8")}
        assert len(found) <= 1, f"{path.relative_to(PROJECT_ROOT)} lists actions {sorted(found)}"


def test_nothing_compares_an_encoder_or_decoder_name():
    """The registries are the one lookup: no ``config.encoder == "flat"`` anywhere in the package."""
    compare = re.compile(r"""\.(encoder|decoder)\)?\s*(==|!=|in)\s*[(\[]?["']""")
    for path in (PROJECT_ROOT / "hiersum").rglob("*.py"):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            assert not compare.search(line), f"{path.relative_to(PROJECT_ROOT)}:{number}: {line.strip()}"


@pytest.mark.parametrize(("registry", "field"), [(encoder_registry.ENCODERS, "encoder"),
                                                 (decoder_registry.DECODERS, "decoder")])
def test_each_registered_name_has_a_model_preset_unless_it_is_the_default(registry, field):
    """The doc's ``conf/model/<name>.yaml``: a model preset that chooses it (the default needs none)."""
    from hiersum.config import ModelConfig

    presets = [path.read_text(encoding="utf-8") for path in (PROJECT_ROOT / "conf" / "model").glob("*.yaml")]
    for name in registry:
        if name != getattr(ModelConfig(), field):
            assert any(re.search(rf"^{field}: {name}$", text, flags=re.M) for text in presets), name
