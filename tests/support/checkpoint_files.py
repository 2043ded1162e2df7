"""Operator actions on a local checkpoint's files, as a restore from an older backup would do."""

from __future__ import annotations

from pathlib import Path


def roll_back(location: str, batches: int) -> list[int]:
    """Delete the newest ``batches`` offsets and commits files (with their .crc files)."""
    root = Path(location)
    ids = sorted(int(p.name) for p in (root / "offsets").iterdir() if p.name.isdigit())
    gone = ids[-batches:]
    for batch in gone:
        for sub in ("offsets", "commits"):
            (root / sub / str(batch)).unlink(missing_ok=True)
            (root / sub / f".{batch}.crc").unlink(missing_ok=True)
    return gone
