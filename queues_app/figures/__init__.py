"""What the domains count and how it is read back: per-minute counters, call facts and
their tally, the service level and the interval report, the processes' heartbeats and the
requests' latency. Below the domains: imports nothing of them."""
