"""``python -m pipelines.cli``: the ``deltasink`` command, as the console script runs it."""

from __future__ import annotations

import sys

from pipelines.cli.parser import main

sys.exit(main())
