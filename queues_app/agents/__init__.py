"""The call center: agents and their skills, the agent queues, matching callers to
agents, the waiting line and escalation (articles 001 and 002)."""


def reset_contention() -> None:
    """Start afresh, as a process whose matchers have lost no races lately and hold no
    claims (tests, and benchmarks measuring one configuration after another)."""
    from queues_app.agents.matching import reset_contention as reset

    reset()
