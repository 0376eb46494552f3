"""A call's record and life: arrival (placed, retried, hung up), the offer and its answer,
transfer and end."""
