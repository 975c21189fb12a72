"""`python -m worker.cli`: the same as the `worker` command."""

import sys

from worker.cli.main import main

sys.exit(main())
