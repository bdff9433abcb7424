"""Evaluation: metrics (rouge-score, sacrebleu, torchmetrics), baselines, bootstrap statistics, scoring of a
split, the report (Markdown, HTML, CSV) and its plots."""
