"""Agents: the roster, their skills, availability and status (queued, attending, in
wrap-up, not ready, offline)."""
