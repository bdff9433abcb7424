from hiersum.commands.evaluate import effective_data_config
from hiersum.config import DataConfig


def test_evaluation_keeps_the_checkpoints_selection_unless_overridden():
    trained = DataConfig(path="train-data", max_paragraphs=24, max_paragraph_tokens=80, limit_eval_examples=3)
    given = DataConfig(path="eval-data", max_paragraphs=40, batch_tokens=999)
    kept = effective_data_config(trained, given, {"path"})
    assert (kept.path, kept.max_paragraphs, kept.max_paragraph_tokens) == ("eval-data", 24, 80)
    assert kept.batch_tokens == 999 and kept.limit_eval_examples is None
    overridden = effective_data_config(trained, given, {"max_paragraphs"})
    assert overridden.max_paragraphs == 40 and overridden.max_paragraph_tokens == 80
    assert effective_data_config(None, given, []) is given


def test_evaluation_keeps_the_checkpoints_ranker_unless_the_selection_is_overridden():
    trained = DataConfig(path="train-data", selection="ranker", ranker="/runs/ranker-best.pt")
    kept = effective_data_config(trained, DataConfig(path="eval-data"), [])
    assert (kept.selection, kept.ranker) == ("ranker", "/runs/ranker-best.pt")
    other = effective_data_config(trained, DataConfig(path="eval-data", ranker="/new/ranker.pt"),
                                  {"ranker"})
    assert (other.selection, other.ranker) == ("ranker", "/new/ranker.pt")
    first = effective_data_config(trained, DataConfig(path="eval-data"), {"selection"})
    assert first.selection == "first"


def test_evaluation_reads_the_checkpoints_data_format_unless_given():
    trained = DataConfig(path="train-data", format="cnndm", max_paragraph_tokens=512)
    kept = effective_data_config(trained, DataConfig(path="test-only"), {"path"})
    assert (kept.path, kept.format, kept.max_paragraph_tokens) == ("test-only", "cnndm", 512)
    given = effective_data_config(trained, DataConfig(path="test-only", format="jsonl"), {"path", "format"})
    assert given.format == "jsonl"
