"""No class of the product is over 350 lines: a class that grows past it holds more than
one concern and is split (as the roster's lists and the call center's two sides were)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 350


def classes():
    for package in ("queues_app", "callcenter"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ClassDef):
                    yield f"{path.relative_to(ROOT)}::{node.name}", node.end_lineno - node.lineno + 1


def test_the_walk_finds_the_classes():
    found = dict(classes())
    assert "queues_app/centre/call_center.py::CallCenter" in found and len(found) > 50


def test_no_class_is_over_the_limit():
    assert {name: lines for name, lines in classes() if lines > LIMIT} == {}
