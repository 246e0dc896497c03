"""The command-line reference, rendered from ``aryl.cli``'s argparse parsers.

The docs build (``hooks.py``) puts it into ``cli.md`` on every build, so the page
cannot drift from the parser: an option added in ``aryl/cli/parser.py`` appears with its
help text, choices and metavar the next time the site is built.
"""

from __future__ import annotations

import argparse


def parser() -> argparse.ArgumentParser:
    """The ``aryl`` command's parser, as ``aryl.cli.main`` builds it."""
    from aryl import cli

    return cli._parser()


def subcommands(top: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Each subcommand's parser by name, in the order ``aryl --help`` lists them."""
    for action in top._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _names(action: argparse.Action, formatter: argparse.HelpFormatter) -> str:
    if not action.option_strings:
        return f"`{formatter._metavar_formatter(action, action.dest)(1)[0]}`"
    if action.nargs == 0:
        return ", ".join(f"`{o}`" for o in action.option_strings)
    value = formatter._format_args(action, action.dest.upper())
    return ", ".join(f"`{o} {value}`" for o in action.option_strings)


def _help(action: argparse.Action, formatter: argparse.HelpFormatter) -> str:
    text = formatter._expand_help(action) if action.help else ""
    if action.choices and not isinstance(action, argparse._SubParsersAction):
        text += " Choices: " + ", ".join(f"`{c}`" for c in action.choices) + "."
    return _cell(text)


def options_table(command: argparse.ArgumentParser) -> list[str]:
    """A Markdown table of the arguments of one parser (help, choices, value names)."""
    formatter = command._get_formatter()
    rows = ["| argument | what it does |", "|---|---|"]
    for action in command._actions:
        if action.help == argparse.SUPPRESS or isinstance(
            action, argparse._SubParsersAction
        ):
            continue
        rows.append(f"| {_names(action, formatter)} | {_help(action, formatter)} |")
    return rows


def _section(title: str, command: argparse.ArgumentParser, extra=()) -> list[str]:
    lines = [f"## `{title}`", ""]
    if command.description:
        lines += [_cell(command._get_formatter()._format_text(command.description)), ""]
    usage = command.format_usage().strip()
    lines += ["```text", usage, "```", "", *extra, *options_table(command), ""]
    return lines


def render() -> str:
    """The whole reference: ``aryl`` and each subcommand, usage and argument tables."""
    top = parser()
    commands = subcommands(top)
    helps = {
        a.dest: a.help
        for s in top._actions
        if isinstance(s, argparse._SubParsersAction)
        for a in s._choices_actions
    }
    table = ["| command | what it does |", "|---|---|"]
    table += [
        f"| [`{name}`](#aryl-{name}) | {_cell(helps.get(name) or '')} |"
        for name in commands
    ]
    lines = _section("aryl", top, [*table, ""])
    for name, command in commands.items():
        lines += _section(f"aryl {name}", command)
    return "\n".join(lines).rstrip() + "\n"
