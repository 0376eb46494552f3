"""The LIFO task queue: PENDING -> TAKEN -> SUCCESS/FAILURE, expiry that sheds old
work, and the single task processor (lease, stream wake-ups, rate limit)."""
