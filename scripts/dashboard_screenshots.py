"""Regenerate the dashboard's screenshots in docs/ from the demo's data.

Runs an aggregator on a temporary SQLite file, fills it as ``ldpcollect demo`` does
(the car, naive Bayes, Adult numbers, baskets and words collections, from the bundled
data sets, seeded), then signs in with Debian's Chromium through Playwright and
photographs the panels the docs show::

    .venv/bin/python scripts/dashboard_screenshots.py            # into docs/
    .venv/bin/python scripts/dashboard_screenshots.py --out /tmp/shots --clients 5000

Needs the ``playwright`` package (the test extra) and ``/usr/bin/chromium``
(``apt-get install -y chromium``; another path with ``--chromium``).
"""

from __future__ import annotations

import argparse
import secrets
import sys
import tempfile
from pathlib import Path
from typing import Any

from ldp_simulation.demo import simulate
from ldp_simulation.fleet import DemoOptions, running_aggregator

SHOTS = {
    "dashboard.png": "/ui/collections/car-demo/frequencies?attribute=buying",
    "dashboard-privacy.png": "/ui/privacy",
}
"""Each screenshot's file name and the page it shows."""


def _sign_in(page: Any, url: str, token: str) -> None:
    page.goto(f"{url}/ui")
    page.get_by_label("Analyst token").fill(token)
    page.get_by_label("Analyst token").press("Enter")
    page.wait_for_url(f"{url}/ui")


def photograph(url: str, token: str, out: Path, chromium: str) -> list[Path]:
    """Sign in at ``url`` and save each of :data:`SHOTS` under ``out``."""
    from playwright.sync_api import sync_playwright

    saved = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium)
        page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
        _sign_in(page, url, token)
        for name, path in SHOTS.items():
            response = page.goto(f"{url}{path}")
            if response is None or response.status != 200:
                raise SystemExit(f"{path} answered {response and response.status}")
            page.wait_for_load_state("load")
            target = out / name
            page.screenshot(path=target)
            saved.append(target)
        browser.close()
    return saved


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("docs"), help="folder (docs/)")
    parser.add_argument("--clients", type=int, default=20_000, help="records per collection")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args(argv)
    admin, analyst = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
    options = DemoOptions(clients=args.clients, seed=args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ldpcollect-shots-") as folder:
        database = f"sqlite:///{Path(folder) / 'demo.db'}"
        with running_aggregator(database, admin, analyst) as url:
            simulate([url], admin, analyst, options)
            for saved in photograph(url, analyst, args.out, args.chromium):
                print(saved)
    return 0


if __name__ == "__main__":
    sys.exit(main())
