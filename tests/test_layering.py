"""The packages' dependencies point one way: language -> engine -> transports -> front end.

Every ``import`` in a package's source counts, including the ones inside functions (an
import that runs late is still a dependency). The allowed edges are the layering the
architecture document describes:

- ``ndlog`` (language core) imports no other package of the project;
- ``topologies``, ``localize`` and ``provenance`` import only ``ndlog``;
- ``engine`` imports ``ndlog``, ``localize`` and ``provenance`` (never Ray, Spark or ``sim``);
- ``sim`` (a transport in virtual time) imports those and ``topologies``;
- ``psn`` (the public API, the command line, Ray and Spark) may import every package.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("ndlog", "topologies", "localize", "provenance", "engine", "sim", "psn")
ALLOWED = {
    "ndlog": set(),
    "topologies": {"ndlog"},
    "localize": {"ndlog"},
    "provenance": {"ndlog"},
    "engine": {"ndlog", "localize", "provenance"},
    "sim": {"ndlog", "localize", "provenance", "engine", "topologies"},
    "psn": set(PACKAGES) - {"psn"},
}
THIRD_PARTY_BANNED = {"engine": {"ray", "pyspark", "tqdm"}, "ndlog": {"ray", "pyspark"},
                      "provenance": {"ray", "pyspark"}, "localize": {"ray", "pyspark"}}


def _imports(package: str) -> dict[str, set[str]]:
    """``imported top-level name -> files`` over every import statement of ``package``."""
    found: dict[str, set[str]] = {}
    for path in (ROOT / package).rglob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".")[0], set()).add(
                    str(path.relative_to(ROOT)))
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_package_imports_only_lower_layers(package):
    imports = _imports(package)
    project = {name: files for name, files in imports.items()
               if name in PACKAGES and name != package}
    bad = {name: sorted(files) for name, files in project.items()
           if name not in ALLOWED[package]}
    assert not bad, f"{package} imports a higher layer: {bad}"
    banned = {name: sorted(files) for name, files in imports.items()
              if name in THIRD_PARTY_BANNED.get(package, ())}
    assert not banned, f"{package} imports a transport library: {banned}"


def test_allowed_edges_have_no_cycle():
    seen: dict[str, int] = {}

    def visit(pkg: str, stack: tuple) -> None:
        assert pkg not in stack, f"import cycle {' -> '.join(stack + (pkg,))}"
        if seen.get(pkg):
            return
        for dep in ALLOWED[pkg]:
            visit(dep, stack + (pkg,))
        seen[pkg] = 1

    for pkg in PACKAGES:
        visit(pkg, ())
