"""Shows ``hotkeys cost``'s estimate (``cost.estimate``): a table of monthly figures, or its JSON."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.table import Table

from hotkeys.cli.cost import CostInputs


def json_text(result: dict[str, Any]) -> str:
    return json.dumps(result, indent=2)


def render(console: Console, inputs: CostInputs, result: dict[str, Any]) -> None:
    """The estimate's lines, each total in bold, then the throughput and prices it assumes."""
    kind = "Kinesis shard" if inputs.source == "kinesis" else "stream shard"
    grid = Table(
        title=f"Monthly cost, {inputs.writes_per_second:,.0f} writes/s of {inputs.avg_item_kb:g} KB items "
        f"({result['shards']} {kind}{'' if result['shards'] == 1 else 's'})"
    )
    grid.add_column("item")
    grid.add_column("USD / month", justify="right")
    for name, value in result["detector"].items():
        grid.add_row(f"detector: {name.replace('_', ' ')}", f"{value:,.2f}")
    grid.add_row("[bold]detector total[/]", f"[bold]{result['detector_total']:,.2f}[/]")
    for name, value in result["contributor_insights"].items():
        grid.add_row(f"Contributor Insights: {name}", f"{value:,.2f}")
    grid.add_row("[bold]Contributor Insights total[/]", f"[bold]{result['contributor_insights_total']:,.2f}[/]")
    for name, value in result["contributor_insights_throttled_keys"].items():
        grid.add_row(f"Contributor Insights, throttled keys mode: {name}", f"{value:,.2f}")
    grid.add_row(
        "[bold]Contributor Insights, throttled keys mode total[/]",
        f"[bold]{result['contributor_insights_throttled_keys_total']:,.2f}[/]",
    )
    console.print(grid)
    if inputs.lean:
        console.print(
            "Priced as the lean deployment (-c lean=true): no dashboard, no throttle alarms, Contributor Insights "
            "off unless asked for, and of the consumer's alarms iterator age, dead letters and errors.",
            highlight=False,
        )
    if result["kinesis"] is not None:
        _kinesis_lines(console, result["kinesis"])
    ratio = result["contributor_insights_ratio"]
    console.print(f"Contributor Insights (all keys) costs {ratio:,}x the detector.", highlight=False)
    console.print(
        f"One shard's function keeps up with ~{result['sustained_records_per_second_per_shard']:,} records/s "
        f"of such items at {inputs.memory_mb} MB (a saturated shard writes ~1,000 WCU/s).",
        highlight=False,
    )
    judge = result["judge"]
    if judge["keeps_up"]:
        line = f"The judge looks at every table in ~{judge['look_seconds']:,} s at {judge['memory_mb']} MB."
    elif judge["memory_needed_mb"] is not None:
        line = (
            f"The judge needs ~{judge['look_seconds']:,} s a look at {judge['memory_mb']} MB, more than half the "
            f"flush interval: deploy with -c judgeMemoryMb={judge['memory_needed_mb']} (priced here at "
            f"{judge['memory_mb']} MB)."
        )
    else:
        line = (
            f"The judge needs ~{judge['look_seconds']:,} s a look at {judge['memory_mb']} MB: even a full vCPU "
            "(-c judgeMemoryMb=1769) falls behind the flush interval at this many shards: merged partitions "
            "and resolutions come a few looks late."
        )
    console.print(line, highlight=False)
    console.print(f"Prices: {result['prices_dated']}. Assumptions: docs/cost.md.")


def _kinesis_lines(console: Console, kinesis: dict[str, Any]) -> None:
    """What a Kinesis source's lines assume: the stream, the detector's share of its shared reads, and
    DynamoDB's change data capture units when the stack made the stream (counted, not priced)."""
    made = "made by the stack" if kinesis["stream_made_by_stack"] else "shared: its hours and writes are not priced"
    console.print(
        f"Read from the {kinesis['mode']} Kinesis stream ({made}), {kinesis['shards']:,} shards, "
        f"~{kinesis['record_bytes']:,} bytes a record ({kinesis['billed_written_kb_per_record']} KB written), "
        f"{kinesis['gb_read']:,} GB read a month.",
        highlight=False,
    )
    use = kinesis["shared_read_per_shard"]
    if kinesis["enhanced_fan_out"]:
        console.print("Its enhanced fan-out consumer reads outside each shard's shared read limits.", highlight=False)
    else:
        console.print(
            f"Of each shard's shared read limits it takes {use['get_records_per_second']} GetRecords/s of "
            f"{use['get_records_limit']} and ~{use['mib_per_second']} MiB/s of {use['mib_limit']:g}.",
            highlight=False,
        )
    if kinesis["change_data_capture_units"] is not None and not kinesis["change_data_capture_priced"]:
        console.print(
            f"DynamoDB's change data capture: {kinesis['change_data_capture_units']:,.0f} units a month, not "
            "priced (no current price found: docs/cost.md).",
            highlight=False,
        )
