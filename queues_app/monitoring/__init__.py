"""Watching the queues: counters the domains write, the overview's figures and alarms,
the sampler, and the invariant checks. Depends on the domains; only `counters` is
imported by them."""
