"""Every ``deltasink ...`` command line of the docs and the README is parsed by the real parser;
every inline ``deltasink <command> --flag`` names a command and flags that exist."""

from __future__ import annotations

import contextlib
import io

import pytest

from pipelines.cli.parser import build_parser
from pipelines.reference.cli import flags, subcommands
from tests.docs.sources import blocks, command_lines, inline_code, markdown_files


def command_blocks() -> list[tuple[str, str, list[str]]]:
    found = []
    for file in markdown_files():
        for block in blocks(file):
            where = block.where.rpartition(":")[0]
            found += [(f"{where}:{n}", line, words) for n, line, words in command_lines(block)]
    return found


def inline_commands() -> list[tuple[str, str]]:
    return [(f.relative_to(f.parents[1]).as_posix() if f.name != "README.md" else "README.md",
             span) for f in markdown_files() for span in inline_code(f)
            if span.startswith("deltasink ")]


def test_the_docs_have_command_lines() -> None:
    assert len(command_blocks()) >= 20
    assert len(inline_commands()) >= 10


@pytest.mark.parametrize(("where", "line", "words"), command_blocks(),
                         ids=[f"{w}:{line}" for w, line, _ in command_blocks()])
def test_command_line_parses(where: str, line: str, words: list[str]) -> None:
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
            build_parser().parse_args(words)
    except SystemExit as exc:
        why = errors.getvalue().strip().splitlines()[-1:]  # argparse's "error: ..." line
        assert exc.code == 0, f"{where}: `{line}` does not parse: {' '.join(why)}"


@pytest.mark.parametrize(("where", "span"), inline_commands(),
                         ids=[f"{w}:{s}" for w, s in inline_commands()])
def test_inline_command_names_a_command_and_flags_that_exist(where: str, span: str) -> None:
    words = span.split()[1:]
    known = {k: v | {"-h", "--help"} for k, v in flags().items()}
    if not words or words[0].startswith("-"):
        assert set(w for w in words if w.startswith("-")) <= known[""], f"{where}: `{span}`"
        return
    command = words[0]
    assert command in subcommands(), f"{where}: `{span}`: no command {command!r}"
    unknown = {w.split("=")[0] for w in words[1:] if w.startswith("-")} - known[command] - {"-"}
    assert not unknown, f"{where}: `{span}`: {command} has no {sorted(unknown)}"
    parser = subcommands()[command]
    choices = [a.choices for a in parser._actions if not a.option_strings and a.choices]
    if choices and len(words) > 1 and not words[1].startswith("-"):
        assert words[1] in choices[0], f"{where}: `{span}`: {command} has no {words[1]!r}"
