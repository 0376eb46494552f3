"""Erlang C staffing for planners: the agents a queue needs, or what a given number
achieves (the arithmetic is queues_app.staffing; docs/staffing.md)."""

import json
import math

from django.core.management.base import CommandError

from queues_app import staffing
from queues_app.management.arguments import CheckedCommand, float_range, int_range


def percent(share: float, *, beside: float | None = None) -> str:
    """A figure to one decimal (88.8%), or one more than the target `beside` it has
    (99.99996% beside 99.9999%); rounded down, so that a figure short of a target never
    reads as reaching it, nor anything short of all as 100%."""
    decimals = 1
    if beside is not None:
        decimals = max(1, len(f"{beside * 100:g}".partition(".")[2]) + 1)
    shown = math.floor(round(share * 100 * 10**decimals, 6)) / 10**decimals
    return f"{shown:.{decimals}f}%"


def given(share: float) -> str:
    return f"{share * 100:g}%"


class Command(CheckedCommand):
    help = (
        "How many agents a queue needs by Erlang C to answer a share of its calls within a time "
        "(with --agents N: what N agents achieve), with the service level, average speed of answer, "
        "share of calls that wait and occupancy. Reads nothing and writes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--calls-per-hour", type=float_range(0, 100_000), required=True, help="calls offered an hour"
        )
        parser.add_argument(
            "--aht", type=float_range(above=0, high=14_400), required=True, help="average handle time, in seconds"
        )
        parser.add_argument(
            "--answer-within",
            type=float_range(0, 86_400),
            required=True,
            help="the service level's answer time, in seconds",
        )
        parser.add_argument(
            "--service-level",
            type=float_range(above=0, below=1),
            required=True,
            help="the share of calls to answer within that time (0.8 for 80%%)",
        )
        parser.add_argument(
            "--agents", type=int_range(1, 1_000_000), help="the figures for this many agents instead of the fewest"
        )
        parser.add_argument(
            "--max-occupancy",
            type=float_range(above=0, high=1),
            help="also keep the agents' share of time on calls at most this",
        )
        parser.add_argument(
            "--shrinkage",
            type=float_range(0, below=1),
            default=0.0,
            help="share of paid time away from the phones (breaks, training, absence): agents to schedule",
        )
        parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")

    def handle(self, calls_per_hour, aht, answer_within, service_level, agents, max_occupancy, shrinkage, **options):
        if agents is not None and max_occupancy is not None:
            raise CommandError("--max-occupancy bounds the agents found; it means nothing with --agents.")
        try:
            if agents is not None:
                figures = staffing.for_agents(
                    agents,
                    calls_per_hour=calls_per_hour,
                    aht_seconds=aht,
                    answer_within_seconds=answer_within,
                    shrinkage=shrinkage,
                )
            else:
                figures = staffing.required(
                    calls_per_hour=calls_per_hour,
                    aht_seconds=aht,
                    answer_within_seconds=answer_within,
                    service_level=service_level,
                    max_occupancy=max_occupancy,
                    shrinkage=shrinkage,
                )
        except staffing.UnstableQueue as exc:
            raise CommandError(str(exc)) from exc
        if options["json"]:
            self.stdout.write(json.dumps(figures.as_dict()))
            return
        self.stdout.write(self._text(figures, calls_per_hour, aht, answer_within, service_level, agents, shrinkage))

    def _text(self, figures, calls_per_hour, aht, answer_within, service_level, agents, shrinkage) -> str:
        met = "met" if figures.service_level >= service_level - staffing.TOLERANCE else "not met"
        if agents is None:
            headline = f"Agents needed: {figures.agents}"
        else:
            headline = f"Agents: {figures.agents} (target {met})"
        if shrinkage:
            headline += f"; {figures.agents_with_shrinkage} to schedule with {given(shrinkage)} shrinkage"
        return "\n".join(
            [
                headline,
                f"Traffic: {figures.traffic_erlangs:g} erlangs ({calls_per_hour:g} calls an hour, {aht:g} s each)",
                f"Service level: {percent(figures.service_level, beside=service_level)} answered within "
                f"{answer_within:g} s (target {given(service_level)}: {met})",
                f"Average speed of answer: {figures.asa_seconds:.1f} s",
                f"Calls that wait: {percent(figures.wait_probability)}",
                f"Occupancy: {percent(figures.occupancy)}",
            ]
        )
