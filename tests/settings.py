"""The test suite's settings: the project's own, loaded in local development mode.

The project's settings refuse to start without DEBUG or production values; tests run
as a laptop does after `make run` (DEBUG on, a key of the tests' own). The values go
into the environment, so subprocesses the tests start (`manage.py ...`) load the same.
pytest (pyproject.toml) and mypy's Django plugin point at this module.
"""

import os

os.environ.setdefault("DEBUG", "true")
# No limit per API token, but in the tests of the limit (which set their own).
os.environ.setdefault("API_RATE_LIMIT", "")
# DynamoDB Local's JVM (the session's, and any that `serve` or `run_local` start) without
# its optimizing compiler and with one GC thread: a run of the suite keeps it busy for
# minutes, not hours, and C2's compiling doubled its CPU time beside the tests' own.
os.environ.setdefault("DYNAMODB_LOCAL_JAVA_OPTIONS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
os.environ.setdefault("SECRET_KEY", "tests-only-" + "k3y-that-is-long-and-never-used-outside-the-suite" * 2)

from callcenter.settings import *  # noqa: E402, F403

# The suite runs commands in its own process, one test after another: no flush thread left
# behind by one test writes another's counts (the flush thread's own tests start it).
SWITCHBOARD_BACKGROUND_FLUSH = False

# Logins in tests hash quickly (the throttle tests log in dozens of times).
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
