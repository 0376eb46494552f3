"""The JSON API for the phone system and other machines (bearer tokens)."""
