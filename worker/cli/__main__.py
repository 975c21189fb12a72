"""`python -m worker.cli`: the same as the `worker` command."""

from worker.cli.main import entry

entry()
