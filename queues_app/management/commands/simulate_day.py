"""Play a day on the floor against a deployment through its API, at a speed: the phone
system's callers and the agents' clients of `queues_app/simulation/days/` (or a day file
of your own), so that the overview, the wallboard and the reports fill as the day goes.

    manage.py simulate_day weekday --speed 10 --url https://switchboard.example --token ...

The day's agents are hired as `sim-1`, `sim-2`... (kept for the next run). A deployment
with agents of its own is refused unless `--force`: the day's callers would go to them and
its calls would count in the centre's figures. See queues_app/simulation/player.py for how
time is scaled.
"""

from __future__ import annotations

import json
import os
import signal
import time

from django.conf import settings
from django.core.management.base import CommandError

import switchboard_client as sc
from queues_app.management.arguments import CheckedCommand, float_range, int_range
from queues_app.management.children import raise_keyboard_interrupt
from queues_app.simulation.day import Day, find
from queues_app.simulation.player import SIMULATED, Player

OWN_AGENTS_SHOWN = 3
RETRIES = 3  # the client's, for a request that cannot be sent or is answered 429 or 503


class Command(CheckedCommand):
    help = "Play a day of callers and agents against a deployment's API, faster than real time."

    def add_arguments(self, parser):
        parser.add_argument("day", nargs="?", default="weekday", help="a day's name (weekday, ...) or a day file")
        parser.add_argument("--speed", type=float_range(above=0, high=3600), default=1.0, help="times real time")
        parser.add_argument("--hours", type=float_range(above=0, high=24), default=None, help="only the first hours")
        parser.add_argument(
            "--url", default=os.environ.get("SWITCHBOARD_URL", "http://127.0.0.1:8000"), help="the site"
        )
        parser.add_argument(
            "--token", default=None, help="an API token (create_api_token); default: $SWITCHBOARD_TOKEN"
        )
        parser.add_argument("--repeat", action="store_true", help="play the day again and again until stopped")
        parser.add_argument("--seed", type=int_range(0), default=None, help="the callers' draw (default: the day's)")
        parser.add_argument("--force", action="store_true", help="play beside the deployment's own agents")
        parser.add_argument(
            "--wait", type=float_range(0, 3600), default=0.0, help="seconds to wait for the site to answer first"
        )
        parser.add_argument(
            "--json", action="store_true", dest="as_json", help="each day's tally as a JSON line (the rest on stderr)"
        )

    def handle(self, day, speed, hours, url, token, repeat, seed, force, as_json, wait, **options):
        self.progress = self.stderr if as_json else self.stdout
        token = token or os.environ.get("SWITCHBOARD_TOKEN", "")
        if not token:
            raise CommandError("an API token is needed: --token, or SWITCHBOARD_TOKEN (manage.py create_api_token).")
        try:
            played = find(day, hours)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        # SIGTERM as Ctrl-C: `make demo` stops it with the rest.
        previous = signal.signal(signal.SIGTERM, raise_keyboard_interrupt)
        try:
            self._against(
                url, token, played, speed=speed, seed=seed, repeat=repeat, force=force, as_json=as_json, wait=wait
            )
        finally:
            signal.signal(signal.SIGTERM, previous)

    def _against(self, url, token, played: Day, *, speed, seed, repeat, force, as_json, wait) -> None:
        # A step that fails after the client's retries is put off by the player, with a pause.
        with sc.Switchboard(url, token, max_retries=RETRIES) as client:
            try:
                self._wait_for(client, wait)
                self._check_floor(client, force)
                self._play(played, client, speed=speed, seed=seed, repeat=repeat, as_json=as_json)
            except (sc.Unauthorized, sc.Forbidden) as exc:
                raise CommandError(f"{url} refused the token: {exc}") from exc
            except sc.Unreachable as exc:
                raise CommandError(f"{url} cannot be reached: {exc}") from exc
            except sc.InvalidInput as exc:  # the day's languages are not in the deployment's catalog
                raise CommandError(f"{url} refused the day's agents, line or callers: {exc}") from exc
            except sc.SwitchboardError as exc:  # hiring the day's agents failed, or the site failed for good
                raise CommandError(f"{url}: {exc}") from exc
            except KeyboardInterrupt:
                self._say("Stopped.")

    def _wait_for(self, client: sc.Switchboard, seconds: float) -> None:
        """Until the site answers (`make demo` starts this beside the server), or `seconds` pass."""
        deadline = time.monotonic() + seconds
        while True:
            try:
                client.list_agents(limit=1)
                return
            except (sc.Unreachable, sc.Unavailable):
                if time.monotonic() >= deadline:
                    raise
                time.sleep(1.0)

    def _check_floor(self, client: sc.Switchboard, force: bool) -> None:
        own = [a for a in client.iter_agents() if not a["agent_id"].startswith(SIMULATED)]
        if own and not force:
            names = ", ".join(repr(a["name"]) for a in own[:OWN_AGENTS_SHOWN])
            raise CommandError(
                f"this deployment has {len(own)} agents of its own ({names}{', ...' if len(own) > 3 else ''}): "
                "a simulated day would give its callers to them and count its calls in the centre's figures. "
                "--force plays it anyway."
            )

    def _play(self, day: Day, client: sc.Switchboard, *, speed, seed, repeat, as_json) -> None:
        others = {k: list(v) for k, v in settings.SWITCHBOARD_SKILLS.items() if k != "language"}
        played, first = 0, day.seed if seed is None else seed
        while True:  # each day again draws other callers
            player = Player(day, client, speed=speed, seed=first + played, log=self._say, other_skills=others)
            self._say(
                f"{day.name}: {len(player.arrivals)} callers from {day.start} for {day.hours:g} h, "
                f"{sum(s.count for s in day.shifts)} agents, at {speed:g} times real time "
                f"({day.hours * 3600 / speed / 60:.0f} min)."
            )
            tally = player.play()
            self._say(f"{day.name} done: {tally}.")
            if as_json:
                self.stdout.write(json.dumps({"day": day.name, "speed": speed, **tally.as_dict()}))
            played += 1
            if not repeat:
                return

    def _say(self, line: str) -> None:
        self.progress.write(line)
        self.progress.flush()
