"""What pages and the API share about HTTP: domain errors mapped to what a person or a
program is told (`errors`), the middleware, roles and logins."""
