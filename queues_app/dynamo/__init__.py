"""The DynamoDB service package: knows DynamoDB, knows nothing of HTTP."""
