"""When to rebuild the Data Docs site: only when a verdict changes, or a validation fails.

Rendering the site is pure Python (no Spark job) but takes seconds per validation, which a
pipeline that runs every 15 minutes pays 96 times a day to redraw the same green page. So the
site is rebuilt when what it shows would change:

* the site has no index yet (first validation, or the folder was wiped);
* the suite's verdict differs from the one the site last showed (pass -> fail, fail -> pass);
* the validation failed: each failure is drawn, with its unexpected values and sample keys.

A passing validation after a passing one leaves the site as it is. Every verdict, drawn or not,
is still recorded in the quality-results table (``quality/results.py``), which is the history.
The last verdict drawn is kept per suite in :data:`VERDICTS`, a small JSON file in the site's
folder, so it follows the site (delete the folder and the next validation redraws it).
"""

from __future__ import annotations

import json
from pathlib import Path

#: The file, in the Data Docs folder, that holds the last verdict drawn per suite.
VERDICTS = ".deltasink-verdicts.json"


def _read(docs_dir: Path) -> dict[str, bool]:
    try:
        data = json.loads((docs_dir / VERDICTS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): bool(v) for k, v in data.items()} if isinstance(data, dict) else {}


def needs_rebuild(docs_dir: Path, suite: str, success: bool) -> bool:
    """Whether the site in ``docs_dir`` must be redrawn for a ``success`` verdict of ``suite``.

    Args:
        docs_dir: the Data Docs folder.
        suite: the suite's name.
        success: the verdict of the validation just run.

    Returns:
        True when the site has no index, the verdict failed, or it differs from the last drawn.
    """
    if not success or not (docs_dir / "index.html").is_file():
        return True
    return _read(docs_dir).get(suite) is not True


def remember(docs_dir: Path, suite: str, success: bool) -> None:
    """Note that the site in ``docs_dir`` now shows a ``success`` verdict of ``suite``."""
    verdicts = {**_read(docs_dir), suite: success}
    (docs_dir / VERDICTS).write_text(json.dumps(verdicts, sort_keys=True), encoding="utf-8")
