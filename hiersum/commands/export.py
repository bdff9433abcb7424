"""``hiersum export``: a checkpoint written as a model directory (:func:`export`).

The story: typed config -> the checkpoint (a ``.ckpt``, or a run directory's best checkpoint) and the run around
it -> the output checked (not an input, writable, empty unless ``overwrite``; checked again once this process holds
its lock, :mod:`hiersum.data.output_lock`: a second export to it is refused) -> the summarizer loaded as
``hiersum summarize`` loads it -> its decoding defaults and model card from the run (``.hydra/config.yaml``,
``.hydra/overrides.yaml``, ``metrics.json``) -> every file written into a temporary folder beside the output,
renamed into place at the end (:func:`hiersum.atomic.publishing_directory`: a failed or interrupted export leaves
no partial directory, and an existing one unchanged). The files: :mod:`hiersum.checkpoints.directory`.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from huggingface_hub import ModelCardData
from omegaconf import DictConfig, OmegaConf

from hiersum.atomic import publishing_directory
from hiersum.checkpoints.directory import ModelNotes, save_model_directory
from hiersum.checkpoints.io import TrainedNetwork
from hiersum.commands.composed import command_config
from hiersum.config import DecodeConfig, ExportConfig
from hiersum.data.output_lock import output_lock
from hiersum.data.overwrite import refuse_overwriting_inputs
from hiersum.errors import UsageError
from hiersum.inference.pipeline import load_summarizer
from hiersum.inference.resumable_output import checkpoint_sha256

USAGE = "hiersum export checkpoint=RUN_OR_CKPT output=DIR"
RUN_CONFIG = Path(".hydra") / "config.yaml"
RUN_OVERRIDES = Path(".hydra") / "overrides.yaml"
METRICS = "metrics.json"
METRIC_COLUMNS = {"rouge1": "ROUGE-1", "rouge2": "ROUGE-2", "rougeL": "ROUGE-L", "rougeLsum": "ROUGE-Lsum",
                  "bleu": "BLEU", "perplexity": "perplexity"}
"""The figures of ``metrics.json`` the model card shows, with their column names."""


@dataclass(frozen=True)
class ExportResult:
    directory: Path
    """The model directory written."""
    checkpoint: Path
    """The checkpoint exported (a run directory's best or last checkpoint)."""


def export(cfg: ExportConfig | DictConfig) -> ExportResult:
    """Write ``cfg.checkpoint`` as the model directory ``cfg.output`` (module docstring); ``cfg``: the typed
    config, or the composed Hydra config it is converted from."""
    cfg = command_config(cfg, ExportConfig, usage=USAGE)
    checkpoint, run_dir = exported_checkpoint(Path(cfg.checkpoint))
    output = Path(cfg.output)
    refuse_output(output, checkpoint, run_dir, overwrite=cfg.overwrite)
    with output_lock(output, what="output directory"):  # one writer; checked again under the lock
        refuse_output(output, checkpoint, run_dir, overwrite=cfg.overwrite)
        network = load_summarizer(str(checkpoint)).network  # a checkpoint without a tokenizer is refused
        notes = ModelNotes(generation=network.decode_config or run_decode_config(run_dir),
                           text=model_card(network, checkpoint, run_dir, export_command(cfg)))
        with publishing_directory(output) as staged:  # an earlier directory (overwrite=true) replaced
            save_model_directory(network, staged, notes)
            give_plain_permissions(staged)
    print(f"exported {checkpoint} to {output}", file=sys.stderr)
    return ExportResult(directory=output, checkpoint=checkpoint)


def exported_checkpoint(path: Path) -> tuple[Path, Path | None]:
    """The checkpoint ``checkpoint=`` names and the run directory around it (None: none). A run directory (it has
    ``checkpoints/``) names the best checkpoint its ``metrics.json`` records, else ``checkpoints/last.ckpt``."""
    if path.is_dir() and (path / "checkpoints").is_dir():
        best = _read_json(path / METRICS).get("best_checkpoint")
        candidates = [path / "checkpoints" / Path(best).name] if best else []
        chosen = next((c for c in [*candidates, path / "checkpoints" / "last.ckpt"] if c.is_file()), None)
        if chosen is None:
            raise UsageError(f"{path}: a run directory with neither its best checkpoint nor checkpoints/last.ckpt; "
                             "expected a run directory of hiersum train, or give checkpoint=FILE.ckpt")
        return chosen, path
    run = path.parent.parent
    is_run = path.parent.name == "checkpoints" and any((run / name).exists() for name in (RUN_CONFIG, METRICS))
    return path, run if is_run else None


def refuse_output(output: Path, checkpoint: Path, run_dir: Path | None, *, overwrite: bool) -> None:
    """A :class:`UsageError` before anything is written when ``output`` holds an input (the checkpoint, the run's
    files that the export reads), is a file, is a non-empty directory without ``overwrite``, or cannot be made."""
    replaced = sorted(path for path in output.rglob("*") if path.is_file()) if output.is_dir() else [output]
    inputs: dict[str, Any] = {"checkpoint": checkpoint}
    if run_dir is not None:
        inputs.update({str(name): run_dir / name for name in (RUN_CONFIG, RUN_OVERRIDES, METRICS)})
    refuse_overwriting_inputs({"a file of output": replaced}, inputs)
    if output.exists() and not output.is_dir():
        raise UsageError(f"output={output} is a file; expected a directory to write (nothing was written)")
    if output.is_dir() and any(output.iterdir()) and not overwrite:
        raise UsageError(f"output={output} is a directory that is not empty; expected a new or empty directory, "
                         "or overwrite=true to replace it (nothing was written)")
    parent = next(folder for folder in [output.parent.absolute(), *output.parent.absolute().parents]
                  if folder.exists())
    if not (parent.is_dir() and os.access(parent, os.W_OK | os.X_OK)):
        raise UsageError(f"cannot write output={output}: {parent} is not a writable folder; choose another output "
                         "(nothing was written)")


def give_plain_permissions(folder: Path) -> None:
    """Give the files of ``folder`` the permissions a plain write gives (the umask's): safetensors writes its file
    private."""
    umask = os.umask(0)
    os.umask(umask)
    for file in folder.iterdir():
        if file.is_file():
            file.chmod(0o666 & ~umask)


def run_decode_config(run_dir: Path | None) -> DecodeConfig:
    """The decoding options of the run (``decode`` of its ``.hydra/config.yaml``); the defaults without one."""
    if run_dir is None or not (run_dir / RUN_CONFIG).is_file():
        return DecodeConfig()
    decode = OmegaConf.load(run_dir / RUN_CONFIG).get("decode")
    try:
        return DecodeConfig(**OmegaConf.to_container(decode)) if decode is not None else DecodeConfig()
    except (TypeError, ValueError) as error:
        raise UsageError(f"{run_dir / RUN_CONFIG}: its decode options are refused ({error}); expected the "
                         "composed config of hiersum train") from None


def export_command(cfg: ExportConfig) -> str:
    """The command line that makes this directory."""
    extra = ["overwrite=true"] if cfg.overwrite else []
    return shlex.join(["hiersum", "export", f"checkpoint={cfg.checkpoint}", f"output={cfg.output}", *extra])


def _read_json(path: Path) -> dict[str, Any]:
    """A JSON object file of a run directory; {} when it is absent or not an object."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def model_card(network: TrainedNetwork, checkpoint: Path, run_dir: Path | None, command: str) -> str:
    """The ``README.md`` of the directory: what the model is, what it was trained on and how, its metrics, how
    to use it and how it was made."""
    header = ModelCardData(library_name="hiersum", pipeline_tag="summarization",
                           tags=["summarization", "multi-document-summarization", "hiersum"]).to_yaml()
    sections = [
        f"---\n{header}\n---\n\n# {checkpoint.stem}: a hierarchical transformer network\n\n"
        "A multi-document network after Liu & Lapata (ACL 2019), \"Hierarchical Transformers for Multi-Document "
        "Summarization\", trained with hiersum: it reads several documents about one topic and writes one summary.",
        _architecture(network),
        _training(network, run_dir),
        _metrics(run_dir),
        _usage(),
        f"## How this directory was made\n\n`{command}`, from `{checkpoint.name}` "
        f"(SHA-256 `{checkpoint_sha256(checkpoint)}`).",
    ]
    return "\n\n".join(section for section in sections if section) + "\n"


def _table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows])


def _architecture(network: TrainedNetwork) -> str:
    model, config = network.model, network.model_config
    parameters = sum(parameter.numel() for parameter in model.parameters())
    rows = [["encoder", config.encoder], ["width (d_model)", config.d_model], ["attention heads", config.heads],
            ["feed-forward width", config.ff_size], ["encoder layers", config.encoder_layers],
            ["inter-paragraph layers", list(config.inter_layers)], ["decoder layers", config.decoder_layers],
            ["paragraph graph", str(config.graph)], ["vocabulary", model.vocab_size],
            ["parameters", f"{parameters:,}"]]
    if config.pretrained_config_json:
        encoder = json.loads(config.pretrained_config_json)
        rows.append(["pretrained encoder", f"{encoder.get('model_type')}, {encoder.get('num_hidden_layers')} layers "
                                           "(its weights are in model.safetensors)"])
    return "## Architecture\n\n" + _table(["setting", "value"], rows)


def _training(network: TrainedNetwork, run_dir: Path | None) -> str:
    data = network.data_config
    text = "## Training data and configuration\n\n"
    if data is not None:
        rows = [["format", data.format], ["path", data.path], ["paragraph selection", str(data.selection)],
                ["paragraphs kept", data.max_paragraphs], ["tokens per paragraph", data.max_paragraph_tokens]]
        text += _table(["data", "value"], rows) + "\n\n"
    text += _started_from(run_dir)
    overrides = run_dir / RUN_OVERRIDES if run_dir is not None else None
    if overrides is not None and overrides.is_file():
        options = [str(option) for option in OmegaConf.load(overrides)]
        text += f"Trained with `{shlex.join(['hiersum', 'train', *options])}`."
    else:
        text += "The training command was not recorded (no `.hydra/overrides.yaml` beside the checkpoint)."
    if run_dir is not None and (run_dir / RUN_CONFIG).is_file():
        config = (run_dir / RUN_CONFIG).read_text(encoding="utf-8")
        text += (f"\n\n<details><summary>The run's configuration ({RUN_CONFIG.as_posix()})</summary>\n\n"
                 f"```yaml\n{config.rstrip()}\n```\n\n</details>")
    return text


def _started_from(run_dir: Path | None) -> str:
    """The sentence of a fine-tuned network: what its run started from (``init_from`` of ``metrics.json``); ""."""
    start = _read_json(run_dir / METRICS).get("init_from") if run_dir is not None else None
    if not isinstance(start, dict) or "path" not in start:
        return ""
    return (f"Fine-tuned from `{start['path']}` (SHA-256 `{start.get('sha256')}`): its weights, model settings and "
            "tokenizer; the data, optimizer and schedule are this run's.\n\n")


def _metrics(run_dir: Path | None) -> str:
    metrics = _read_json(run_dir / METRICS) if run_dir is not None else {}
    rows = [[split, system, *(_figure(figures.get(key)) for key in METRIC_COLUMNS)]
            for split, systems in metrics.items() if isinstance(systems, dict)
            for system, figures in systems.items() if isinstance(figures, dict) and "rouge1" in figures]
    if not rows:
        return "## Metrics\n\nNo metrics recorded (the checkpoint is not in a run directory with a metrics.json)."
    best = Path(str(metrics.get("best_checkpoint") or "the run's best checkpoint")).name
    return (f"## Metrics\n\nFrom the run's metrics.json (scored with {best}; ROUGE F1 and BLEU x 100):\n\n"
            + _table(["split", "system", *METRIC_COLUMNS.values()], rows))


def _figure(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, (int, float)) else ""


def _usage() -> str:
    return ("## Use\n\n```bash\nhiersum summarize checkpoint=THIS_DIRECTORY input=docs/ output=summaries.jsonl\n```"
            "\n\n```python\nfrom hiersum.inference import load_summarizer\n\n"
            "summarizer = load_summarizer(\"THIS_DIRECTORY\")  # .model (HierSum), .tokenizer, .data_config\n"
            "[line] = summarizer.summarize(\"A paragraph.\\n\\nAnother paragraph.\", beam_size=2)  # line[\"summary\"]"
            "\n```\n\n"
            "generation_config.json holds the decoding options of the run that trained it: `hiersum summarize`, "
            "`hiersum serve` and `summarize(...)` decode with them, but for the options they are given.")
