"""Watching the queues, read from the domains and the figures: the overview's panels and
alarms, the wallboard, the sampler behind collect_metrics, /metrics, and the invariant
checks."""
