"""The audit trail: its store (`store`), its entries and filters (`records`), before and
after in the domain's words (`readable`), and an agent's day (`day`)."""
