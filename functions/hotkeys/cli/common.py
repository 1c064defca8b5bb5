"""What every ``hotkeys`` command shares: the error users see, flag types, settings flags, AWS clients.

The commands that run the detector's code take its settings as flags derived from the
schema (``hotkeys.detector.config.OPTIONS``): the same names, defaults, ranges and
messages as the deployed function.
"""

from __future__ import annotations

import argparse
import difflib
import math
import os
import re
import sys
import textwrap
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from rich.console import Console
from rich.table import Table

from hotkeys.detector.adapters.aws import AwsClients, AwsTarget
from hotkeys.detector.config import (
    OPTION_BY_NAME,
    OPTION_BY_VARIABLE,
    ConfigError,
    Option,
    Settings,
    settings_from,
)
from hotkeys.detector.domain.rate import is_hot, is_possibly_hot, percent_of_limit, whole
from hotkeys.detector.domain.windows import parse_iso_utc
from hotkeys.detector.proposals import is_proposed, where

if TYPE_CHECKING:
    from hotkeys.cli.rows import TopRow


class UserError(Exception):
    """A mistake the user can fix; shown as one line."""


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line on stderr (naming the flag) and exit status 2."""

    _argv: Sequence[str] = ()

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        self._argv = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        # argparse names a missing required flag before a misspelt one: the misspelling is the mistake.
        if message.startswith("the following arguments are required"):
            message = self._unknown_option() or message
        print(f"hotkeys: {message} (see: {self.prog} --help)", file=sys.stderr)
        raise SystemExit(2)

    def _unknown_option(self) -> str | None:
        known = self._option_string_actions
        for text in self._argv:
            if text == "--":
                break
            name = text.split("=", 1)[0]
            if name.startswith("-") and name not in known and not _NEGATIVE_NUMBER.match(name):
                close = difflib.get_close_matches(name, [option for option in known if option.startswith("--")], 1)
                return f"unrecognized argument {name}" + (f" (did you mean {close[0]}?)" if close else "")
        return None


_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


# One validation path: every command's flags of the same kind use the same type, so the same
# flag name means the same thing everywhere.
def at_least(low: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        return value

    return parse


def between(low: int, high: int) -> Callable[[str], int]:
    """A whole number from ``low`` to ``high`` (Lambda's memory: 128 to 10,240 MB)."""
    at_least_low = at_least(low)

    def parse(text: str) -> int:
        value = at_least_low(text)
        if value > high:
            raise argparse.ArgumentTypeError(f"must be at most {high}, got {value}")
        return value

    return parse


def number(low: float, high: float | None = None, *, above: bool = False) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
        if not math.isfinite(value) or (value <= low if above else value < low) or (high is not None and value > high):
            bound = f"above {low:g}" if above else f"at least {low:g}"
            raise argparse.ArgumentTypeError(
                f"must be {bound}{f' and at most {high:g}' if high is not None else ''}, got {text}"
            )
        return value

    return parse


def endpoint_url(text: str) -> str:
    from urllib.parse import urlparse

    parsed = urlparse(text)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise argparse.ArgumentTypeError(f"must be an http(s):// URL such as http://127.0.0.1:5000, got {text!r}")
    return text


def iso_time(text: str) -> int:
    try:
        return parse_iso_utc(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be an ISO 8601 time such as 2026-11-30T10:00:00Z, got {text!r}"
        ) from None


def setting_type(option: Option) -> Callable[[str], Any]:
    """The function's own parser of a setting, as an argparse type (its message, without the variable)."""

    def parse(text: str) -> Any:
        if not text.strip():
            raise argparse.ArgumentTypeError("must not be empty")
        try:
            return option.parse(text)
        except ConfigError as error:
            raise argparse.ArgumentTypeError(error.problem) from None

    return parse


def add_setting_flags(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    names: tuple[str, ...],
    notes: Mapping[str, str] | None = None,
) -> None:
    """Flags for these settings, each from the schema: name, type, range, help and default (and the
    command's own note on one, from ``notes``)."""
    for name in names:
        option = OPTION_BY_NAME[name]
        if option.cli_flag is None:
            raise ValueError(f"setting {name} has no CLI flag in the schema")
        parser.add_argument(
            option.cli_flag,
            dest=name,
            type=setting_type(option),
            default=None,
            help=_setting_help(option) + (f"; {notes[name]}" if notes and name in notes else ""),
        )


def _setting_help(option: Any) -> str:
    """An option's help with its default and variable, the default said once (a help that names it
    already, "(default: read with DescribeTable)", keeps its own words)."""
    if "(default" in option.help and option.help.endswith(")"):
        return f"{option.help[:-1]}; the function's {option.variable})"
    default = option.documented_default
    said = "none" if default == "—" else default  # (docs/deploy.md's table writes a dash)
    return f"{option.help} (default {said}; the function's {option.variable})"


def settings_from_args(args: argparse.Namespace, names: tuple[str, ...], **fixed: Any) -> Settings:
    """The function's settings from these flags (each already parsed by argparse with its option's own
    parser, ``setting_type``) and ``fixed`` values: built once, never turned back into text. A flag not
    given takes the function's default; a rule between settings that fails names the flag."""
    given: dict[str, Any] = {name: getattr(args, name, None) for name in names}
    given.update(fixed)
    try:
        return settings_from(given)
    except ConfigError as error:
        flag = OPTION_BY_VARIABLE[error.variable].cli_flag
        problem = _in_flags(error.problem, names)
        raise UserError(f"{flag}: {problem}" if flag else str(error)) from None


def _in_flags(problem: str, names: tuple[str, ...]) -> str:
    """A rule's message with the settings this command has flags for named by their flags."""
    for name in names:
        option = OPTION_BY_NAME[name]
        if option.cli_flag:
            problem = re.sub(rf"\b{option.variable}\b", option.cli_flag, problem)
    return problem


def partial_images_warning(partial: int, records: int, read: str = "") -> str:
    """The warning for ``partial`` records of ``records`` that lack an item image (``replay.lacks_images``),
    as ``replay`` and ``watch`` say it (``read``: " read" for a stream read live)."""
    return (
        f"{partial:,} of the {records:,} records{read} carry the keys or one item image, not both images (a "
        "KEYS_ONLY, NEW_IMAGE or OLD_IMAGE stream): write units are sized from what they carry (the keys alone "
        "at 1 WCU; an update by one image, a delete by its keys or old image), so every figure is a lower "
        "estimate; the stream must use NEW_AND_OLD_IMAGES"
    )


def add_aws_flags(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--endpoint-url", type=endpoint_url, help="an AWS-compatible endpoint (moto server, LocalStack)"
    )
    command.add_argument("--region", help="AWS region (default: your AWS configuration)")


def aws_clients(args: argparse.Namespace, default_region: str | None = None) -> AwsClients:
    """Clients for the region and endpoint chosen on the command line (nothing process-wide is changed)."""
    return AwsClients(AwsTarget(region=cli_region(args.region, default_region), endpoint_url=args.endpoint_url))


def cli_region(
    flag: str | None, default_region: str | None = None, environ: Mapping[str, str] = os.environ
) -> str | None:
    """``--region``, else ``AWS_REGION``, else boto3's own choice (``AWS_DEFAULT_REGION``, the profile).

    The AWS SDKs and Tools reference guide names ``AWS_REGION`` as the environment variable of the
    region setting, read before the shared config file, and the AWS CLI v2 and the other SDKs (the
    CDK CLI's included) read it; boto3 reads only ``AWS_DEFAULT_REGION``, so without this a shell
    set up for those tools (``AWS_REGION=us-east-1``) would get "You must specify a region".
    ``default_region`` is the command's own fallback (the in-process replay's), after the variable.
    """
    return flag or environ.get("AWS_REGION") or default_region


# A wrapped line's continuation sits this far past the line's own indent.
HANGING_INDENT = 4


def say(console: Console, text: str, style: str | None = None) -> None:
    """One line of prose (a verdict, an alert, a throttled key's detail): on a terminal, wrapped to its
    width with its continuation lines indented past the line's own indent, never inside a word (a key, a
    window start); piped, whole on one line, as scripts and the samples read it."""
    if not console.is_terminal:
        console.print(text, markup=False, highlight=False, soft_wrap=True, style=style)
        return
    indent = len(text) - len(text.lstrip(" "))
    lines = textwrap.wrap(
        text.strip(" "),
        width=console.width,
        initial_indent=" " * indent,
        subsequent_indent=" " * (indent + HANGING_INDENT),
        break_long_words=False,
        break_on_hyphens=False,
    )
    for line in lines or [""]:
        console.print(line, markup=False, highlight=False, soft_wrap=True, style=style)


def where_of(table: str, index: str | None) -> str:
    """A table, a table's GSI ("orders index by-status") or a what-if proposal, as every view names it."""
    return where(table, index)


def partition_of(table: str, index: str | None, key: str) -> str:
    """A partition as every view names it: "orders/event#42", or "orders index by-status: PENDING"."""
    return f"{table}/{key}" if not index else f"{where_of(table, index)}: {key}"


def render_top(console: Console, rows: list[TopRow], settings: Settings, title: str) -> None:
    console.print(top_table(rows, settings, title, width=console.width))


# From the most to the fewest columns: the first whose every cell fits whole on one line is shown.
LAYOUTS = ("wide", "narrow", "stacked")


def top_table(rows: list[TopRow], settings: Settings, title: str, width: int | None = None) -> Table:
    """The top-keys table of ``TopRow``s, for ``top``, ``watch`` and the replay, in the widest
    layout (``LAYOUTS``) that fits ``width`` columns with no key, table name or time split over lines
    (None: the wide one). The key is the answer: narrow, the table drops the count columns and the rate's
    upper end; stacked, the window start goes above the table and key in one cell; a key longer than the
    terminal folds onto more lines, never cut. WCU figures are lower estimates, and the wide table says so.
    A key has one rate (``TopRow.wcu_per_second``, what alerts quote) and its % of the partition limit;
    a possibly hot key (only the rate's upper end reaches the threshold) shows the range of both. Hot rows
    are bold red, possibly hot ones yellow, where the terminal shows colour (the figures say the same in
    plain text): threshold and limit are ``settings``', the ones the command was given."""
    grid = _top_table(rows, settings, title, LAYOUTS[0])
    for layout in LAYOUTS[1:]:
        if width is None or natural_width(grid) <= width:
            break
        grid = _top_table(rows, settings, title, layout)
    return grid


def natural_width(table: Table) -> int:
    """The width ``table`` takes when no cell wraps."""
    from rich.measure import Measurement

    console = Console(width=100_000)
    return Measurement.get(console, console.options, table).maximum


# Each layout's text columns and figure columns (the figures in the order each row lists them).
_COLUMNS = {
    "wide": (
        ["window (UTC)", "table", "key"],
        ["WCU/s", "at most", "% of limit", "share", "writes", "WCU", "up to +"],
    ),
    "narrow": (["window (UTC)", "table/key"], ["WCU/s", "% of limit", "share"]),
    "stacked": (["window (UTC)\ntable/key"], ["WCU/s", "% of\nlimit", "share"]),
}


def _top_table(rows: list[TopRow], settings: Settings, title: str, layout: str) -> Table:
    partition_limit = settings.partition_wcu_limit
    wide = layout == "wide"
    caption = "WCU is a lower estimate: a key's true write units are at most 'up to +' more." if wide else None
    grid = Table(title=title, caption=caption)
    texts, figures = _COLUMNS[layout]
    for column in texts:
        grid.add_column(column, overflow="fold", ratio=3 if "key" in column else None)
    for column in figures:
        width = max(len(line) for line in column.split("\n"))
        grid.add_column(column, justify="right", overflow="ellipsis", no_wrap=True, min_width=width)
    for row in rows:
        table = where_of(row.table, row.index)
        key = partition_of(row.table, row.index, row.key)
        cells = {
            "wide": [row.window_start, table, row.key],
            "narrow": [row.window_start, key],
            "stacked": [f"{row.window_start}\n{key}"],
        }[layout]
        rate, most = row.wcu_per_second, row.at_most_wcu_per_second
        possibly = possibly_hot(row, settings, proposals=True)
        numbers = [f"{rate:,.1f}", *([f"{most:,.1f}"] if wide else [])]
        low, high = (whole(percent_of_limit(value, partition_limit)) for value in (rate, most))
        numbers += [f"{low}-{high}%" if possibly else f"{low}%"]
        numbers += [f"{100 * row.share:.1f}%"]
        numbers += [f"{row.writes:,}", f"{row.wcu:,}", f"{row.error_bound:,}"] if wide else []
        hot = at_alert(row, settings, proposals=True)
        # A proposal's partition is never an alert: italic, and magenta (not red) when it would be one.
        style = (
            ("italic magenta" if hot or possibly else "italic")
            if is_proposed(row.index)
            else "bold red"
            if hot
            else "yellow"
            if possibly
            else None
        )
        grid.add_row(*cells, *numbers, style=style)
    return grid


def at_alert(row: TopRow, settings: Settings, proposals: bool = False) -> bool:
    """Whether a row is hot (``domain.rate.is_hot``; a proposal's partition is never an alert, unless
    ``proposals``)."""
    return (proposals or not is_proposed(row.index)) and is_hot(row.wcu_per_second, settings)


def possibly_hot(row: TopRow, settings: Settings, proposals: bool = False) -> bool:
    """Whether a row is possibly hot: only its rate's upper end is hot (``domain.rate.is_possibly_hot``)."""
    real = proposals or not is_proposed(row.index)
    return real and is_possibly_hot(row.wcu_per_second, row.at_most_wcu_per_second, settings)


def render_families(console: Console, families: list[dict[str, Any]]) -> None:
    """Write-sharded key families, rolled up: one line each, the verdict included."""
    if not families:
        return
    console.print(f"[bold]Write-sharded key families[/] ({len(families)}):")
    for family in families:
        where = where_of(family["table"], family.get("index"))
        line = f"  {family['window_start']} {where}: {family['verdict']}"
        console.print(line, markup=False, highlight=False, soft_wrap=True)
