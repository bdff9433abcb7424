"""The screenshot of docs/serving.md: ``hiersum serve`` on a checkpoint, its page at ``/`` filled with the first
record of a JSONL split in headless Chromium (Debian's ``chromium``, driven by Playwright), saved full-page.

    python scripts/screenshot_serve_page.py outputs/train/RUN/checkpoints/epoch15-step2512.ckpt \
        docs/assets/serve-page.png --records data/sample/test.jsonl

Prints the summary the page shows. Needs ``pip install playwright`` and ``/usr/bin/chromium``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

from hiersum.serving.client import free_port, wait_until_healthy

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint")
    parser.add_argument("output", help="the PNG to write")
    parser.add_argument("--records", default="data/sample/test.jsonl", help="native JSONL; its first record is shown")
    args = parser.parse_args()
    with open(args.records, encoding="utf-8") as handle:
        example = json.loads(next(handle))
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "hiersum", "serve", f"checkpoint={args.checkpoint}",
                               f"port={port}", "attention_top_k=3", "log_level=warning"])
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(url, server, timeout=120)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            page.goto(f"{url}/")
            page.fill("#title", example.get("title") or "")
            page.fill("#documents", "\n---\n".join(example["documents"]))
            page.click("#submit")
            page.wait_for_selector("#result:not([hidden])", timeout=120_000)
            print(page.inner_text("#summary"))
            page.screenshot(path=str(Path(args.output)), full_page=True)
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=60)


if __name__ == "__main__":
    main()
