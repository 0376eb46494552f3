"""The lock files in requirements/ (`make lock`) hold what pyproject.toml asks for, each
package pinned and hashed, and a deployment installs the versions the tests run on: the
lock cannot go stale without this failing."""

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
LOCKS = ROOT / "requirements"
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
DEPENDENCIES = PROJECT["project"]["dependencies"]
EXTRAS = PROJECT["project"]["optional-dependencies"]
BUILD = PROJECT["build-system"]["requires"]

# The extras a deployment may use (deploy.txt); the others are for development only.
DEPLOYED = ("postgres", "redis", "sentry")
# Each lock file and what it must hold.
WANTED = {
    "base.txt": DEPENDENCIES,
    "deploy.txt": DEPENDENCIES + [requirement for extra in DEPLOYED for requirement in EXTRAS[extra]],
    "build.txt": BUILD,
    "dev.txt": DEPENDENCIES + [requirement for extra in EXTRAS.values() for requirement in extra] + BUILD,
}
PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[^\s;\\]+)")


def pins(name: str) -> dict[str, tuple[str, list[str]]]:
    """{package: (version, hashes)} of one lock file."""
    found: dict[str, tuple[str, list[str]]] = {}
    hashes: list[str] = []
    for line in (LOCKS / name).read_text().splitlines():
        if match := PIN.match(line):
            hashes = []
            found[canonicalize_name(match["name"])] = (match["version"], hashes)
        elif line.strip().startswith("--hash=sha256:"):
            hashes.append(line.strip().removeprefix("--hash=sha256:").rstrip(" \\"))
        elif line.strip() and not line.lstrip().startswith("#"):
            raise AssertionError(f"{name}: a line that is neither a pin, a hash nor a comment: {line!r}")
    return found


def test_every_extra_is_decided_on():
    """A new extra is for deployments (DEPLOYED here and deploy.txt's line in `make lock`) or not."""
    assert set(EXTRAS) == {"dev", "demo", *DEPLOYED}


@pytest.mark.parametrize("lock", sorted(WANTED))
def test_a_lock_file_pins_every_requirement_at_a_version_it_allows(lock):
    locked = pins(lock)
    for wanted in map(Requirement, WANTED[lock]):
        name = canonicalize_name(wanted.name)
        assert name in locked, f"{lock} lacks {wanted.name} (pyproject.toml asks for it): make lock"
        version = locked[name][0]
        assert wanted.specifier.contains(version, prereleases=True), (
            f"{lock} pins {wanted.name}=={version}, pyproject.toml asks for {wanted}: make lock"
        )


@pytest.mark.parametrize("lock", sorted(WANTED))
def test_every_pin_carries_its_hashes(lock):
    locked = pins(lock)
    assert locked
    for name, (version, hashes) in locked.items():
        assert hashes and all(re.fullmatch(r"[0-9a-f]{64}", h) for h in hashes), f"{lock}: {name}=={version}"


@pytest.mark.parametrize("lock", ["base.txt", "deploy.txt", "build.txt"])
def test_a_deployment_installs_the_versions_the_tests_run_on(lock):
    """dev.txt (`make setup`) holds every package of the others, at the same version."""
    development = {name: version for name, (version, _) in pins("dev.txt").items()}
    for name, (version, _) in pins(lock).items():
        assert development.get(name) == version, f"{lock} pins {name}=={version}, dev.txt {development.get(name)}"


def test_the_build_requirements_to_lock_are_the_build_systems():
    listed = [line for line in (LOCKS / "build.in").read_text().splitlines() if line and not line.startswith("#")]
    assert listed == BUILD
