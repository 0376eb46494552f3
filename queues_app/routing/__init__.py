"""Routing: matching callers to queued agents, the waiting line, escalation, each skill
combination's queue, and the matcher process with its dispatcher."""
