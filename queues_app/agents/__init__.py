"""The call center: agents and their skills, the agent queues, matching callers to
agents, the waiting line and escalation (articles 001 and 002)."""
