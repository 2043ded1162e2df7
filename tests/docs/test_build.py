"""``mkdocs build --strict``: the site builds, and a broken link or a missing page fails it."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.docs.conftest import mkdocs
from tests.docs.sources import ROOT


def test_the_site_builds_strict_with_every_generated_page(built_site: Path) -> None:
    for page in ("index.html", "reference/cli/index.html", "reference/configuration/index.html",
                 "reference/environment/index.html", "reference/bundle/index.html",
                 "reference/tables/index.html", "architecture/wings/index.html",
                 "performance/scheduled/index.html"):
        assert (built_site / page).is_file(), page
    scheduled = (built_site / "performance/scheduled/index.html").read_text(encoding="utf-8")
    assert "Where the seconds go" in scheduled  # bench/results/scheduled.md, included


def test_a_broken_link_or_a_missing_page_fails_the_strict_build(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", docs)
    (docs / "index.md").write_text("# x\n\n[gone](no-such-page.md)\n", encoding="utf-8")
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    config = config.replace("docs_dir: docs", f"docs_dir: {docs}").replace(
        "  - docs/hooks.py", f"  - {ROOT / 'docs' / 'hooks.py'}").replace(
        "      - Tests: development/tests.md",
        "      - Tests: development/tests.md\n      - Gone: development/missing.md")
    (tmp_path / "mkdocs.yml").write_text(config, encoding="utf-8")

    result = mkdocs(tmp_path / "mkdocs.yml", tmp_path / "site")

    assert result.returncode != 0
    out = result.stdout + result.stderr
    assert "no-such-page.md" in out, out
    assert "development/missing.md" in out, out
