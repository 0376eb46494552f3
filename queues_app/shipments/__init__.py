"""The shipments priority queue: receive with a visibility timeout, complete, fail and
retry, the dead-letter queue, supervisor actions, and fair consumption (article 003)."""


def reset_contention() -> None:
    """Start afresh, as a process whose consumers have lost no races lately (tests, and
    benchmarks measuring a lone consumer)."""
    from queues_app.shipments.consuming import reset_contention as reset

    reset()
