"""The README's Python API: every name of its table imports, its example runs (as written, on a tiny checkpoint),
and the network's methods of the table work on a tiny model."""

from __future__ import annotations

import re

import torch

from hiersum.config import DataConfig, OptimConfig
from hiersum.data.tokenizer import train_tokenizer
from tests.helpers.checkpoints import save_summarizer_checkpoint
from tests.helpers.config import tiny_model_config
from tests.helpers.names import resolve
from tests.helpers.paths import PROJECT_ROOT

TEXTS = ["the cat sat on the mat", "a dog ran in the park", "the bird sang a song", "it rained all day"]


def api_names() -> list[str]:
    """``hiersum.x.y`` names of the README's Python API table (call arguments dropped)."""
    readme = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Python API\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `hiersum.")]
    return [name for row in rows for name in re.findall(r"`(hiersum\.[\w.]+)", row.split(" | ")[0])]


def test_every_name_of_the_api_table_imports():
    names = api_names()
    assert len(names) >= 10 and "hiersum.decoding.generate" in names
    for name in names:
        assert callable(resolve(name)), name


def readme_example() -> str:
    """The Python code block of the README's Python API section."""
    readme = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Python API\n", 1)[1].split("\n## ", 1)[0]
    [code] = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    return code


def test_the_readme_example_runs_as_written_on_a_tiny_checkpoint(tmp_path, capsys):
    """The example as written (it decodes on the CPU, ``load_network``'s default), its checkpoint path the tiny
    checkpoint's."""
    code = readme_example()
    placeholder = '"outputs/train/<run>/checkpoints/last.ckpt"'
    assert code.count(placeholder) == 1
    checkpoint = save_summarizer_checkpoint(tmp_path / "last.ckpt")
    namespace: dict = {}
    exec(compile(code.replace(placeholder, repr(str(checkpoint))), "README.md", "exec"), namespace)
    line, lines = namespace["line"], namespace["lines"]
    assert capsys.readouterr().out == f"{line['summary']} {line['score']}\n"
    assert [entry["id"] for entry in lines] == ["ada", "input-2"]
    assert all(len(entry["n_best"]) == 2 and len(entry["paragraphs"]) == 2 for entry in lines)
    assert namespace["model"] is namespace["summarizer"].model


def test_the_network_api_of_the_table_on_a_tiny_checkpoint(tmp_path, device):
    from hiersum.checkpoints import load_network
    from hiersum.decoding import GenerationOptions, generate
    from hiersum.training.module import HierSumModule, module_hparams

    tokenizer = train_tokenizer(TEXTS * 5, vocab_size=80)
    config = tiny_model_config()
    torch.manual_seed(0)
    module = HierSumModule(**module_hparams(config, OptimConfig(), DataConfig(path="x"), tokenizer))
    checkpoint = {"state_dict": module.state_dict(), "hyper_parameters": dict(module.hparams)}
    module.on_save_checkpoint(checkpoint)
    torch.save(checkpoint, tmp_path / "last.ckpt")

    summarizer = load_network(tmp_path / "last.ckpt")
    model, loaded_tokenizer = summarizer.model.to(device), summarizer.tokenizer
    paragraphs = [loaded_tokenizer.encode_batch(TEXTS[:2]), loaded_tokenizer.encode_batch(TEXTS[2:])]
    T = max(len(ids) for example in paragraphs for ids in example)
    src = torch.full((2, 2, T), loaded_tokenizer.special.pad)  # (B, P, T)
    for b, example in enumerate(paragraphs):
        for p, ids in enumerate(example):
            src[b, p, : len(ids)] = torch.tensor(ids)
    src_mask = src != loaded_tokenizer.special.pad
    tgt_in = torch.tensor([[loaded_tokenizer.special.bos, 5, 6], [loaded_tokenizer.special.bos, 7, 8]])  # (B, S)
    src, src_mask, tgt_in = src.to(device), src_mask.to(device), tgt_in.to(device)

    encoded = model.encode(src, src_mask)
    assert encoded.memory.shape == (2, int(src_mask.sum(dim=(1, 2)).max()), 16)
    log_probs = model(src, src_mask, tgt_in).log_probs
    assert log_probs.shape == (2, 3, loaded_tokenizer.vocab_size)
    torch.testing.assert_close(log_probs.exp().sum(-1), torch.ones(2, 3, device=device))
    options = GenerationOptions(beam_size=4, alpha=0.6, max_length=8, no_repeat_ngram_size=3)
    out = generate(model, src, src_mask, options)
    assert out.sequences == generate(module.model.eval().to(device), src, src_mask, options).sequences
    summaries = [loaded_tokenizer.decode(tokens) for tokens in out.sequences]
    assert len(summaries) == 2 and all(isinstance(text, str) for text in summaries)
