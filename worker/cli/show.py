"""`worker show RUN_DIR`: one self-contained HTML page of a run, or an eval's index page."""

from __future__ import annotations

import argparse
import os
import webbrowser
from pathlib import Path

from policies.secrets import run_secrets
from worker.show.write import write_pages


def add_show_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of `worker show`."""
    p.add_argument("run_dir", type=Path, help="the --out folder of worker fix, ci or eval")
    p.add_argument("--out", type=Path, default=None, help="the page's file (default: in RUN_DIR)")
    p.add_argument("--open", action="store_true", help="open the page in a browser")


def run_show(args: argparse.Namespace) -> int:
    """Write the page, say where; 0."""
    # The run masked its own secrets; the API key this shell holds is masked here too.
    secrets = run_secrets((), os.environ)
    page = write_pages(args.run_dir.expanduser().resolve(), args.out, secrets=secrets)
    print(f"page: {page}")
    if args.open:
        webbrowser.open(page.resolve().as_uri())
    return 0
