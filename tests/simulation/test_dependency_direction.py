"""The dependency direction: ldp_client -> ldp_shared <- ldp_aggregator, and
ldp_simulation on top, used by nobody.

Every module of the client, the aggregator and the shared core is imported in a fresh
interpreter (so nothing this test process loaded counts), the aggregator's own command
line runs ``migrate`` there, and none of it may load ``ldp_simulation``. A static pass
over the sources also catches an import hidden inside a function that no import-time
check would see.
"""

from __future__ import annotations

import ast
import json
import pkgutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import ldp_aggregator
import ldp_client
import ldp_shared

LOWER_PACKAGES = [ldp_shared, ldp_client, ldp_aggregator]


def _loaded_after(code: str) -> set[str]:
    """Top-level package names in ``sys.modules`` after running ``code`` in a new interpreter."""
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    return {name.split(".")[0] for name in json.loads(run.stdout.splitlines()[-1])}


def _all_modules(package: ModuleType) -> list[str]:
    """The package and every module under it, except Alembic's (they run only under Alembic)."""
    found = pkgutil.walk_packages(package.__path__, package.__name__ + ".")
    names = [package.__name__, *(module.name for module in found)]
    return [name for name in names if not name.startswith("ldp_aggregator.migrations.")]


@pytest.mark.parametrize(
    "code",
    [
        "import ldp_client\nfrom ldp_client import LDPClient, AsyncLDPClient",
        "from ldp_aggregator.app import create_app",
        "from ldp_aggregator.cli import main, build_parser\nbuild_parser()",
    ],
    ids=["client", "aggregator-app", "aggregator-cli"],
)
def test_client_and_aggregator_entry_points_do_not_load_the_simulation(code: str) -> None:
    loaded = _loaded_after(code)
    assert "ldp_simulation" not in loaded
    assert {"ldp_client", "ldp_aggregator"} & loaded


def test_no_module_of_the_lower_packages_loads_the_simulation() -> None:
    modules = [m for package in LOWER_PACKAGES for m in _all_modules(package)]
    assert "ldp_aggregator.storage.migrate" in modules
    code = "import importlib\n" + "".join(f"importlib.import_module({m!r})\n" for m in modules)
    assert "ldp_simulation" not in _loaded_after(code)


def test_the_aggregator_command_line_migrates_without_the_simulation(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'direction.db'}"
    code = (
        "from ldp_aggregator.cli import main\n"
        f"assert main(['migrate', '--database-url', {url!r}]) == 0"
    )
    assert "ldp_simulation" not in _loaded_after(code)


def _imported_names(source: Path) -> set[str]:
    tree = ast.parse(source.read_text(encoding="utf-8"), filename=str(source))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_no_source_of_the_lower_packages_names_the_simulation() -> None:
    offenders = []
    for package in LOWER_PACKAGES:
        assert package.__file__ is not None
        root = Path(package.__file__).parent
        for source in sorted(root.rglob("*.py")):
            if any(n.split(".")[0] == "ldp_simulation" for n in _imported_names(source)):
                offenders.append(str(source.relative_to(root.parent)))
    assert not offenders, offenders
