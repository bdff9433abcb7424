"""A mistyped option is refused in one line that names the options it probably meant (and not Hydra's advice to
add it with ``+``, which a typed config would ignore); an option like no other gets no suggestion."""

from __future__ import annotations

import pytest

from tests.helpers.cli import assert_usage_error, run_main

SUGGESTED = [
    ("prepare", "workers=2", "did you mean data.num_workers or data.prepare_workers?"),
    ("prepare", "data.batch_token=5", "did you mean data.batch_tokens?"),
    ("train", "model.head=2", "did you mean model.heads?"),
    ("train", "trainer.max_step=3", "did you mean trainer.max_steps"),
]


@pytest.mark.parametrize(("action", "option", "expected"), SUGGESTED, ids=[option for _, option, _ in SUGGESTED])
def test_a_mistyped_option_names_the_options_it_probably_meant(action, option, expected, tmp_path, monkeypatch,
                                                               capsys):
    code, stderr = run_main(action, [option, f"hydra.run.dir={tmp_path / 'run'}"], monkeypatch, capsys)
    assert_usage_error(code, stderr, f"hiersum-{action}: error:", f"Could not override '{option.split('=')[0]}'",
                       expected)
    assert "To append to your config use +" not in stderr


def test_an_option_like_no_other_gets_no_suggestion(tmp_path, monkeypatch, capsys):
    code, stderr = run_main("prepare", ["zzz=1", f"hydra.run.dir={tmp_path / 'run'}"], monkeypatch, capsys)
    assert_usage_error(code, stderr, "hiersum-prepare: error:", "Key 'zzz' not in 'PrepareConfig'")
    assert "did you mean" not in stderr
