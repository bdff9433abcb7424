"""``hiersum <action>``: the index of actions, each action's help (at once: no torch imported), unknown
actions, and the ``hiersum-<action>`` aliases (the same entry points, the same output)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from hiersum.cli.actions import ACTIONS
from hiersum.cli.common import CONFIG_DIR
from hiersum.cli.main import main, script_action
from tests.helpers.cli import BIN, assert_usage_error, cli_env, console_scripts, run_cli, run_in_process

HYDRA_ACTIONS = [name for name, action in ACTIONS.items() if action.config is not None]


def test_help_lists_every_action_with_its_summary(capsys):
    main(["--help"])
    out = capsys.readouterr().out
    assert out.startswith("usage: hiersum <action>")
    for name, action in ACTIONS.items():
        assert f"  {name}" in out and action.summary in out


@pytest.mark.parametrize("argv", [[], ["sumarize"]])
def test_no_or_an_unknown_action_is_a_usage_error(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "hiersum: error:" in err
    assert "expected one of train, evaluate, summarize" in err


def test_every_action_has_an_alias_script_on_the_same_entry_point():
    """pyproject.toml's console scripts are ``hiersum`` and one ``hiersum-<action>`` per entry of the table, all
    :func:`hiersum.cli.main.main`."""
    scripts = console_scripts()
    assert scripts == {"hiersum": "hiersum.cli.main:main",
                       **{f"hiersum-{name}": "hiersum.cli.main:main" for name in ACTIONS}}


def test_an_alias_script_runs_the_action_its_name_says(monkeypatch, capsys):
    assert script_action("/venv/bin/hiersum-evaluate-selection") == "evaluate-selection"
    assert script_action("C:/venv/Scripts/hiersum-train.exe") == "train"
    assert script_action("/venv/bin/hiersum") is script_action("hiersum-nothing") is script_action("main.py") is None
    monkeypatch.setattr(sys, "argv", ["/venv/bin/hiersum-train", "--help"])
    main()
    assert capsys.readouterr().out.startswith("usage: hiersum train")


def test_each_action_names_a_function_and_a_typed_config():
    """Every table entry loads; a Hydra action has its primary config, its help page and its schema."""
    for name, action in ACTIONS.items():
        assert callable(action.load()), name
        if action.config is not None:
            assert (Path(CONFIG_DIR) / f"{action.config}.yaml").is_file(), name
            assert (Path(CONFIG_DIR) / "hydra" / "help" / f"{action.config}.yaml").is_file(), name
            assert action.schema is not None, name


def test_help_imports_neither_torch_nor_lightning():
    """``hiersum --help`` and ``hiersum <action> --help`` answer before the heavy libraries load."""
    probe = (
        "import sys, importlib, contextlib, io\n"
        "from hiersum.cli.actions import ACTIONS\nfrom hiersum.cli.main import main\n"
        "for name, action in ACTIONS.items():\n"
        "    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "        main([name, '--help'])  # argparse's help exits 0\n"
        "print(sorted(m for m in ('torch', 'pytorch_lightning', 'transformers') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=cli_env(), timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize("action", HYDRA_ACTIONS)
def test_each_hydra_action_has_its_own_help_page(action, capsys):
    main([action, "--help"])
    page = capsys.readouterr().out
    assert page.startswith(f"usage: hiersum {action}") and "Example\n  hiersum " + action in page
    assert "== Config: every key can be set as key=value ==" in page and "task_name:" in page
    assert "$CONFIG" not in page and "$APP_CONFIG_GROUPS" not in page and "powered by Hydra" not in page


@pytest.mark.parametrize("action", HYDRA_ACTIONS)
def test_each_action_help_lists_only_the_groups_its_config_takes(action, capsys):
    """The groups of the primary config's defaults list, each with its options, when the page lists groups."""
    defaults = yaml.safe_load((Path(CONFIG_DIR) / f"{ACTIONS[action].config}.yaml").read_text())["defaults"]
    taken = {group for entry in defaults if isinstance(entry, dict) for group in entry
             if not group.startswith(("hydra", "override"))}
    main([action, "--help"])
    lines = {line.strip() for line in capsys.readouterr().out.splitlines()}
    groups = [path for path in Path(CONFIG_DIR).iterdir() if path.is_dir() and path.name != "hydra"]
    listed = {group.name for group in groups
              if f"{group.name}: {', '.join(sorted(option.stem for option in group.glob('*.yaml')))}" in lines}
    assert listed == (taken if "== Config groups (group=option) ==" in lines else set())


def test_summarize_help_fits_a_screen_and_lists_only_what_summarize_takes(capsys):
    main(["summarize", "--help"])
    page = capsys.readouterr().out
    assert len(page.splitlines()) <= 55
    assert "checkpoint=" in page and "input=" in page and "output=" in page and "decode:" in page
    assert "trainer" not in page and "optim" not in page and "model:" not in page


def test_help_shows_the_config_the_overrides_compose(capsys):
    main(["train", "model=paper", "--help"])
    page = capsys.readouterr().out
    assert "encoder_layers: 8" in page and "model: flat_paper, flat_small" in page
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "model=no_such_model", "--help"])
    assert exit_info.value.code == 2 and "no_such_model" in capsys.readouterr().err


@pytest.mark.slow
def test_the_alias_and_the_action_write_the_same_output(tiny_corpus, tmp_path, monkeypatch, capsys):
    """Both console scripts as processes; the usage error of ``hiersum rank`` through its ``main`` in process."""
    source = tiny_corpus / "test.jsonl"
    outputs = {}
    for name, command in [("alias", ["hiersum-rank"]), ("action", ["hiersum", "rank"])]:
        output = tmp_path / f"{name}.jsonl"
        run_cli(command[0], [*command[1:], "ranker=tfidf", f"input={source}", f"output={output}", "top_k=3",
                             f"hydra.run.dir={tmp_path / name}"])
        outputs[name] = [json.loads(line) for line in output.read_text().splitlines()]
    assert outputs["alias"] == outputs["action"] and len(outputs["action"]) == 8
    result = run_in_process("hiersum", ["rank", "ranker=tfidf", f"input={source}", "output=x.jsonl", "top_k=0",
                                        f"hydra.run.dir={tmp_path / 'bad'}"], monkeypatch, capsys)
    assert_usage_error(result.returncode, result.stderr, "hiersum rank: error:", "top_k must be >= 1")


@pytest.mark.slow
@pytest.mark.parametrize("alias", ["hiersum-summarize", "hiersum-average-checkpoints"])
def test_an_alias_prints_the_action_help(alias):
    result = subprocess.run([str(BIN / alias), "--help"], capture_output=True, text=True, env=cli_env(), timeout=60)
    assert result.returncode == 0 and alias.removeprefix("hiersum-") in result.stdout.splitlines()[0]


def test_a_process_an_action_starts_again_without_its_name_runs_it(monkeypatch, capsys):
    """Lightning's DDP ranks run ``hiersum`` again with the action's options only: the action is inherited."""
    monkeypatch.setenv("HIERSUM_ACTION", "train")
    main(["model=tiny", "--help"])
    assert capsys.readouterr().out.startswith("usage: hiersum train")
    monkeypatch.delenv("HIERSUM_ACTION")
    with pytest.raises(SystemExit):
        main(["model=tiny"])
    assert "unknown action 'model=tiny'" in capsys.readouterr().err


def test_a_run_directory_that_cannot_be_created_is_one_line(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    with pytest.raises(SystemExit) as exit_info:
        main(["evaluate", "predictions=p.jsonl", f"hydra.run.dir={tmp_path / 'file' / 'run'}",
              "hydra/job_logging=none", "hydra/hydra_logging=none"])  # no handler kept on pytest's captured stream
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and len(err.strip().splitlines()) == 1
    assert f"cannot create the run directory {tmp_path / 'file' / 'run'} (Not a directory)" in err
