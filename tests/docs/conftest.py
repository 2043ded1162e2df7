"""The docs site, built once per test session with ``mkdocs build --strict``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.sources import ROOT


def mkdocs(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """Run ``mkdocs build --strict`` on ``config`` into ``site``, from the repository root."""
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
         "--site-dir", str(site)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})


@pytest.fixture(scope="session")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built from ``mkdocs.yml`` (the build must succeed)."""
    site = tmp_path_factory.mktemp("site")
    result = mkdocs(ROOT / "mkdocs.yml", site)
    assert result.returncode == 0, result.stdout + result.stderr
    return site
