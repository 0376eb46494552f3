"""Lines: the centre's own queues, each with its promise, its hours and what happens when
it is full (docs/architecture.md). So far: their hours of operation (`hours`)."""
