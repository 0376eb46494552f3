"""How often the batch-means interval of `bench.day` leaves out Erlang's prediction when
the queue is the ideal one: the interval's real coverage, so that a figure outside it is
read for what it is worth.

    .venv/bin/python -m bench.coverage [--agents 10] [--calls-per-hour 127.5] [--handle-seconds 240]
        [--patience-seconds S] [--hours 8] [--warmup-minutes 30] [--batches 10] [--seeds 100]

No DynamoDB: the ideal queue (`erlang.fifo`) is played for each seed with Poisson
arrivals and exponential handle times (and patience), cut into batches as `bench.day`
cuts a steady day, and each figure's 95% interval is checked against the prediction.
Printed: per figure, the prediction and how many seeds of `--seeds` left it out (5 in
100 for an exact interval).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys

from bench import erlang


def left_out(args: argparse.Namespace) -> dict[str, tuple[float, int]]:
    rate = args.calls_per_hour / 3600
    predicted = erlang.predict(args.agents, rate, args.handle_seconds, 20, args.patience_seconds)
    figures = {"wait probability": predicted.wait_probability, "mean wait (s)": predicted.mean_wait}
    missed = dict.fromkeys(figures, 0)
    for seed in range(args.seeds):
        rng, moment, callers = random.Random(seed), 0.0, []
        while (moment := moment + rng.expovariate(rate)) < args.hours * 3600:
            patience = rng.expovariate(1 / args.patience_seconds) if args.patience_seconds else None
            callers.append((moment, rng.expovariate(1 / args.handle_seconds), patience))
        lived = erlang.fifo(callers, args.agents)
        first = args.warmup_minutes * 60
        length = (args.hours * 3600 - first) / args.batches
        batches: list[list[float]] = [[] for _ in range(args.batches)]
        for (at, _handle, _patience), (wait, _answered) in zip(callers, lived, strict=True):
            if at >= first:
                batches[min(int((at - first) / length), args.batches - 1)].append(wait)
        for name, of in (("wait probability", lambda w: float(w > 0)), ("mean wait (s)", lambda w: w)):
            mean, half = erlang.batch_means([statistics.fmean(of(w) for w in batch) for batch in batches])
            missed[name] += abs(mean - figures[name]) > half
    return {name: (figures[name], missed[name]) for name in figures}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", type=int, default=10)
    parser.add_argument("--calls-per-hour", type=float, default=127.5)
    parser.add_argument("--handle-seconds", type=float, default=240.0)
    parser.add_argument("--patience-seconds", type=float, default=None)
    parser.add_argument("--hours", type=float, default=8.0)
    parser.add_argument("--warmup-minutes", type=float, default=30.0)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--seeds", type=int, default=100)
    args = parser.parse_args(argv)
    for name, (predicted, missed) in left_out(args).items():
        print(f"{name}: predicted {predicted:.4g}; the 95% interval left it out for {missed} of {args.seeds} seeds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
