"""The page of ``hiersum serve`` in a real browser: headless Chromium (Debian's ``chromium``) driven by
Playwright submits the form and finds the summary of the API and the attended paragraphs shaded. Skipped where
``/usr/bin/chromium`` or the ``playwright`` package is absent (CI installs both: ``make ci-deps``). With
``HIERSUM_SCREENSHOT=PATH`` the page is also saved there (the screenshot of docs/serving.md)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

from hiersum.serving.client import post_json
from tests.helpers.paths import SAMPLE_DIR
from tests.helpers.serving import start_server, stop_server

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no browser at {CHROMIUM} (make ci-deps)")]


def test_the_page_shows_the_summary_and_shades_the_attended_paragraphs(checkpoint, tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api", reason="no playwright package (make ci-deps)")
    with open(SAMPLE_DIR / "test.jsonl", encoding="utf-8") as handle:
        example = json.loads(next(handle))
    process, url = start_server(checkpoint, tmp_path / "server", "attention_top_k=3")
    try:
        status, expected = post_json(f"{url}/summarize", {"title": example["title"], "documents": example["documents"],
                                                     "options": {"beam_size": 4, "max_length": 80}})
        assert status == 200
        with sync_api.sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            page.goto(f"{url}/")
            page.fill("#title", example["title"])
            page.fill("#documents", "\n---\n".join(example["documents"]))
            page.click("#submit")
            page.wait_for_selector("#result:not([hidden])", timeout=60_000)
            summary = page.inner_text("#summary")
            attended = page.eval_on_selector_all(
                ".paragraph.attended", "blocks => blocks.map(b => [b.textContent, b.style.backgroundColor])")
            top = page.eval_on_selector_all("#top li", "items => items.map(i => i.textContent)")
            error = page.inner_text("#error")
            if os.environ.get("HIERSUM_SCREENSHOT"):
                page.screenshot(path=os.environ["HIERSUM_SCREENSHOT"], full_page=True)
            browser.close()
    finally:
        stop_server(process)
    assert error == ""
    assert summary == expected["summary"] and summary
    assert len(attended) == len(expected["paragraphs"]) == len(top) == 3
    for (text, background), paragraph in zip(sorted(attended), sorted(p["text"] for p in expected["paragraphs"]),
                                             strict=True):
        assert text.endswith(paragraph) and background.startswith("rgba(255, 170, 0"), (text, background)
    assert all(f"({p['attention']:.3f}): {p['text']}" in item for p, item in zip(expected["paragraphs"], top,
                                                                                   strict=True))


def test_with_a_key_the_page_asks_for_it_once_and_warns_of_a_model_of_the_sample_corpus(checkpoint, tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    saved = torch.load(checkpoint, map_location="cpu", weights_only=False)
    saved["hyper_parameters"]["data"]["path"] = "/somewhere/data/sample"  # as if trained on the sample corpus
    torch.save(saved, tmp_path / "sample.ckpt")
    process, url = start_server(tmp_path / "sample.ckpt", tmp_path / "server", "api_key=page-key")
    dialogs = []

    def answer(dialog) -> None:  # noqa: ANN001 - Playwright's Dialog
        dialogs.append(dialog.message)
        dialog.accept("page-key")

    try:
        with sync_api.sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            page = browser.new_page()
            page.on("dialog", answer)
            page.goto(f"{url}/")
            page.fill("#documents", "First paragraph here.\n\nSecond one.")
            results = []
            for _ in range(2):
                page.click("#submit")
                page.wait_for_selector("#result:not([hidden])", timeout=60_000)
                page.wait_for_function("!document.getElementById('submit').disabled", timeout=60_000)
                results.append((page.inner_text("#error"), page.is_visible("#sample-warning"),
                                page.inner_text("#corpus")))
            browser.close()
    finally:
        stop_server(process)
    assert len(dialogs) == 1 and "X-API-Key" in dialogs[0]
    assert results == [("", True, "model trained on: /somewhere/data/sample (data.format=jsonl)")] * 2
