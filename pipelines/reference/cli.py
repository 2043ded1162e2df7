"""The CLI reference: every subcommand and flag of :func:`pipelines.cli.parser.build_parser`."""

from __future__ import annotations

import argparse

from pipelines.cli.parser import build_parser
from pipelines.reference.markdown import cell, code, generated_note, table


def subcommands(parser: argparse.ArgumentParser | None = None
                ) -> dict[str, argparse.ArgumentParser]:
    """The parser's subcommands by name, in the order ``--help`` lists them."""
    parser = parser or build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions
            if not isinstance(a, argparse._HelpAction | argparse._SubParsersAction)]


def flags(parser: argparse.ArgumentParser | None = None) -> dict[str, set[str]]:
    """Every option string per subcommand (``""`` for the top level), e.g. ``{"run": {...}}``."""
    parser = parser or build_parser()
    found = {"": {s for a in _options(parser) for s in a.option_strings}}
    for name, sub in subcommands(parser).items():
        found[name] = {s for a in _options(sub) for s in a.option_strings}
    return found


def _value(action: argparse.Action) -> str:
    if action.nargs == 0:
        return ""
    if action.choices:
        return " \\| ".join(code(str(c)) for c in action.choices)
    return code(str(action.metavar or action.dest.upper()))


def _default(action: argparse.Action) -> str:
    if action.required:
        return "**required**"
    if action.nargs == 0 or action.default in (None, argparse.SUPPRESS):
        return ""
    return code(str(action.default))


def _rows(parser: argparse.ArgumentParser) -> list[list[str]]:
    rows = []
    for action in _options(parser):
        names = ", ".join(code(s) for s in action.option_strings) or code(action.dest)
        text = (action.help or "").replace("%%", "%")
        rows.append([names, _value(action), _default(action), cell(text)])
    return rows


def render() -> str:
    """The CLI reference page (Markdown)."""
    parser = build_parser()
    out = ["# CLI reference\n", generated_note("`pipelines.cli.parser.build_parser()`"),
           cell(parser.description or "") + "\n", "```text\n" + parser.format_usage() + "```\n",
           table(["option", "value", "default", "meaning"], _rows(parser)),
           "```text\n" + (parser.epilog or "") + "```\n"]
    for name, sub in subcommands(parser).items():
        out += [f"## `deltasink {name}`\n", cell(sub.description or "") + "\n",
                "```text\n" + sub.format_usage() + "```\n",
                table(["option", "value", "default", "meaning"], _rows(sub))]
    return "\n".join(out)
