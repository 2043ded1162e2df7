"""When the Data Docs site is redrawn: a missing site, a failure, or a changed verdict."""

from __future__ import annotations

from pathlib import Path

from quality.docs import needs_rebuild, remember


def _site(tmp_path: Path) -> Path:
    (tmp_path / "index.html").write_text("<html></html>", encoding="utf-8")
    return tmp_path


def test_a_site_without_an_index_is_always_drawn(tmp_path: Path) -> None:
    remember(tmp_path, "s", True)

    assert needs_rebuild(tmp_path, "s", True)


def test_a_pass_after_a_drawn_pass_is_not_redrawn(tmp_path: Path) -> None:
    docs = _site(tmp_path)
    remember(docs, "s", True)

    assert not needs_rebuild(docs, "s", True)
    assert needs_rebuild(docs, "other", True)  # each suite has its own last verdict


def test_a_failure_is_always_drawn_and_the_pass_after_it_too(tmp_path: Path) -> None:
    docs = _site(tmp_path)
    remember(docs, "s", True)
    assert needs_rebuild(docs, "s", False)
    remember(docs, "s", False)

    assert needs_rebuild(docs, "s", False)
    assert needs_rebuild(docs, "s", True)


def test_an_unreadable_verdict_file_redraws(tmp_path: Path) -> None:
    docs = _site(tmp_path)
    (docs / ".deltasink-verdicts.json").write_text("not json", encoding="utf-8")

    assert needs_rebuild(docs, "s", True)
