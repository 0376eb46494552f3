"""The lower layers of the package keep to their place: the DynamoDB core imports nothing
of the project, the domain packages import only what lies below them and not each
other. (`make lint` checks every layer with import-linter, pyproject.toml
[tool.importlinter]; these are the contracts the tree keeps already, run with the tests.)"""

import itertools

import pytest

grimp = pytest.importorskip("grimp")

DOMAIN = ["queues_app.agents", "queues_app.shipments", "queues_app.tasks"]
ABOVE_DOMAIN = [
    "queues_app.views",
    "queues_app.api",
    "queues_app.admin",
    "queues_app.management",
    "queues_app.actions",
    "queues_app.admission",
    "queues_app.audit_trail",
    "queues_app.monitoring.overview",
    "queues_app.monitoring.sampler",
    "queues_app.monitoring.invariants",
]


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph("queues_app")


def chain(graph, importer, imported):
    return graph.find_shortest_chain(importer=importer, imported=imported, as_packages=True)


def project_imports_of(graph, package):
    modules = {package} | graph.find_descendants(package) if graph.find_children(package) else {package}
    return {
        imported
        for module in modules
        for imported in graph.find_modules_directly_imported_by(module)
        if imported != package and not imported.startswith(package + ".")
    }


def test_the_dynamodb_core_imports_nothing_else_of_the_project(graph):
    assert project_imports_of(graph, "queues_app.ddb") == set()


def test_the_counters_import_only_the_dynamodb_core(graph):
    assert {
        m for m in project_imports_of(graph, "queues_app.monitoring.counters") if not m.startswith("queues_app.ddb")
    } == set()


@pytest.mark.parametrize(("one", "other"), list(itertools.permutations(DOMAIN, 2)))
def test_the_domain_packages_are_independent(graph, one, other):
    assert chain(graph, one, other) is None


@pytest.mark.parametrize("package", DOMAIN + ["queues_app.ddb", "queues_app.monitoring.counters"])
def test_the_lower_layers_reach_nothing_above_them(graph, package):
    reached = {upper: chain(graph, package, upper) for upper in ABOVE_DOMAIN}
    assert {upper: found for upper, found in reached.items() if found} == {}
