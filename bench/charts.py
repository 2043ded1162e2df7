"""Figures over time as Mermaid ``xychart-beta`` blocks: drawn on GitHub and on the docs site."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def xychart(title: str, xs: Sequence[float], series: Mapping[str, Sequence[float | None]]
            ) -> list[str]:
    """A Mermaid line chart of ``series`` over ``xs`` (minutes), one line per series, with a
    legend line under it (Mermaid's xychart draws no legend). Missing values repeat the last."""
    def filled(values: Sequence[float | None]) -> list[float]:
        out: list[float] = []
        for v in values:
            out.append(float(v) if v is not None else (out[-1] if out else 0.0))
        return out

    top = max((v for vs in series.values() for v in filled(vs)), default=1.0) or 1.0
    lines = [f"**{title}** (lines, in order: {', '.join(f'`{k}`' for k in series)})", "",
             "```mermaid", "xychart-beta", f'    title "{title}"',
             "    x-axis \"minute\" [" + ", ".join(f"{x:g}" for x in xs) + "]",
             f"    y-axis 0 --> {top * 1.1:.4g}"]
    lines += ["    line [" + ", ".join(f"{v:g}" for v in filled(vs)) + "]"
              for vs in series.values()]
    return [*lines, "```", ""]
