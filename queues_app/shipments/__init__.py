"""The shipments priority queue: receive with a visibility timeout, complete, fail and
retry, the dead-letter queue, supervisor actions, and fair consumption (article 003)."""
