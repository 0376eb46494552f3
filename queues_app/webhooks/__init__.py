"""Webhooks: call events written to an outbox on the shipments queue in the same
transaction as the change, and delivered, signed, to the API token's callback URL
(docs/callbacks.md)."""
