"""The DynamoDB core, with no domain in it: the client, the request meter, errors, the
wire codec and clock, paging, batches, table definitions and DynamoDB Local."""
