"""Helpers shared by the test modules, by topic (no test module imports another; the
fixtures are in the conftest.py files):

- api: the JSON API's client (`Api`), `assert_problem`, the documented OPERATIONS;
- api_fuzz: the schemathesis harness of the API fuzzers;
- page_fuzz: the world the page fuzzers show;
- pages: reading figures off the pages; seen: what a page's forms carry for an item;
- old_layouts: the tables as earlier versions left them;
- races: a caller hanging up while an agent comes back (threads, DynamoDB Local);
- threads: running product code in threads; receiver: a callback endpoint;
- clock: time the test moves (`ManualClock`, `Moments`); users: the tests' people;
- browser: logging in with Playwright; settings: the project's settings in a fresh process;
- manage_cases: several `manage.py` command lines, each in a child forked from one
  started Django;
- postgres_redis: a throwaway PostgreSQL and Redis (the several-hosts tests).
"""
