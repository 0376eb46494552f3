"""What a phone system does with Switchboard, end to end: a caller rings, is placed with
their preferences, waits until an agent takes them (or hangs up), and when the
conversation ends the agent is released for the next caller.

    SWITCHBOARD_URL=http://127.0.0.1:8000 \\
    SWITCHBOARD_TOKEN=$(python manage.py create_api_token supervisor --name "phone system") \\
    python examples/phone_system.py --language Spanish --talk-seconds 5

The phone system's own call id is the Idempotency-Key, so placing the same ringing call
twice (after a crash, a timeout, a retry) never puts two callers in the line.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid

from switchboard_client import ApiError, Switchboard, SwitchboardError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Place one caller, wait for an agent, then end the call.")
    parser.add_argument("--url", default=os.environ.get("SWITCHBOARD_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--token", default=os.environ.get("SWITCHBOARD_TOKEN"), help="or SWITCHBOARD_TOKEN")
    parser.add_argument("--language", help="the caller's language, e.g. Spanish (default: any)")
    parser.add_argument("--gender", help="the agent's gender the caller asked for (default: any)")
    parser.add_argument("--priority", type=int, default=0, help="0 to 9, higher first")
    parser.add_argument("--pbx-call-id", default=None, help="the phone system's id of the ringing call")
    parser.add_argument("--wait-seconds", type=float, default=120.0, help="hang up after waiting this long")
    parser.add_argument("--talk-seconds", type=float, default=3.0, help="how long the conversation lasts")
    args = parser.parse_args(argv)
    if not args.token:
        parser.error("a token is needed: --token or SWITCHBOARD_TOKEN (python manage.py create_api_token)")

    preferences = {name: value for name, value in (("language", args.language), ("gender", args.gender)) if value}
    pbx_call_id = args.pbx_call_id or f"pbx-{uuid.uuid4().hex[:12]}"
    try:
        with Switchboard(args.url, args.token) as switchboard:
            call = switchboard.create_call(preferences, priority=args.priority, idempotency_key=pbx_call_id)
            print(f"call {call['call_id']}: {call['status']}")
            if call["status"] == "waiting":
                call = switchboard.wait_for_call(call["call_id"], timeout=args.wait_seconds)
            if call["status"] != "assigned":
                print(f"nobody took call {call['call_id']} within {args.wait_seconds:g} s; the caller hangs up")
                try:
                    switchboard.abandon_call(call["call_id"])
                except ApiError as exc:
                    print(f"could not mark the call abandoned: {exc}")
                return 1
            print(f"agent {call['agent_name']} ({call['agent_id']}) answers after {call['waited_seconds']} s")
            time.sleep(args.talk_seconds)  # the conversation
            # The call is ended by naming it: sent again after a timeout, it is answered as done.
            ended = switchboard.end_call(call["call_id"], then="queue")
            agent, next_call = ended["agent"], ended["call"]
            print(f"{agent['name']} is {agent['status_label'].lower()}", end="")
            print(f" and took call {next_call['call_id']}" if next_call else "")
    except ApiError as exc:
        print(f"Switchboard refused: {exc}" + (f" ({exc.fields})" if exc.fields else ""), file=sys.stderr)
        return 2
    except SwitchboardError as exc:
        print(f"Switchboard unreachable: {exc}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
