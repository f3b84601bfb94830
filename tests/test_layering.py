"""The layering `contracts` ← `graphs` ← `librarian_svc`: no package imports one above it, not even lazily.

Nor does any of them import what the image leaves out (`reference_orchestrator`, `bench`, `tests`): such an
import works in a checkout and fails in production.

`graphs/ace/__main__.py` once imported `librarian_svc.settings` inside a function (a cycle: the service imports
`graphs.ace`), which an import at module level only would not show; so every import in the tree counts:
inside functions, under `TYPE_CHECKING`, relative ones, and `importlib.import_module` / `__import__` of a literal.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OUTSIDE_THE_IMAGE = ("reference_orchestrator", "bench", "tests")
"""Packages the image leaves out (the Containerfile copies contracts, graphs and librarian_svc only)."""
FORBIDDEN = {
    "contracts": ("graphs", "librarian_svc", *OUTSIDE_THE_IMAGE),
    "graphs": ("librarian_svc", *OUTSIDE_THE_IMAGE),
    "librarian_svc": OUTSIDE_THE_IMAGE,
}
"""For each package the service runs, the packages above it and those the image does not hold."""


def imported_modules(path: Path, root: Path = ROOT) -> set[str]:
    """Every module `path` (under `root`) may import, wherever in the file the import is."""
    package = list(path.relative_to(root).parent.parts)  # what a relative import is relative to
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            names.add(module)
            names |= {f"{module}.{alias.name}".lstrip(".") for alias in node.names}  # `from . import x`: a module?
        elif (
            isinstance(node, ast.Call)
            and (
                (isinstance(node.func, ast.Name) and node.func.id == "__import__")
                or (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
            )
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.add(node.args[0].value)
    return names


def offenders(package: str, root: Path = ROOT) -> dict[str, list[str]]:
    """The files of `package` that import a package above it, and what they import from there."""
    above = FORBIDDEN[package]
    found = {
        path.relative_to(root).as_posix(): sorted(
            name for name in imported_modules(path, root) if name.split(".")[0] in above
        )
        for path in sorted((root / package).rglob("*.py"))
    }
    return {file: names for file, names in found.items() if names}


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_no_package_imports_one_above_it(package: str) -> None:
    assert (ROOT / package / "__init__.py").is_file()  # the walk below is not over an empty tree
    assert offenders(package) == {}


def test_the_check_sees_every_form_of_import(tmp_path: Path) -> None:
    """A test that cannot fail proves nothing: the lazy import it was written for, and the other forms, count."""
    (tmp_path / "graphs" / "ace").mkdir(parents=True)
    (tmp_path / "graphs" / "ace" / "__main__.py").write_text(
        "from __future__ import annotations\n"
        "import importlib\n"
        "from typing import TYPE_CHECKING\n"
        "from . import checks\n"
        "from ..config_files import load_sections\n"
        "if TYPE_CHECKING:\n"
        "    from librarian_svc.app import App\n"
        "def f() -> None:\n"
        "    from librarian_svc.settings import load_config_dir\n"
        "    import librarian_svc.workers as w\n"
        "    importlib.import_module('librarian_svc.state')\n"
        "    __import__('librarian_svc')\n",
        encoding="utf-8",
    )
    (tmp_path / "contracts").mkdir()
    (tmp_path / "contracts" / "base.py").write_text("def f() -> None:\n    import graphs.errors\n", encoding="utf-8")
    path = tmp_path / "graphs" / "ace" / "__main__.py"
    assert {"graphs.ace.checks", "graphs.config_files", "graphs.config_files.load_sections"} <= imported_modules(
        path, tmp_path
    )
    assert offenders("graphs", tmp_path) == {
        "graphs/ace/__main__.py": [
            "librarian_svc",
            "librarian_svc.app",
            "librarian_svc.app.App",
            "librarian_svc.settings",
            "librarian_svc.settings.load_config_dir",
            "librarian_svc.state",
            "librarian_svc.workers",
        ]
    }
    assert offenders("contracts", tmp_path) == {"contracts/base.py": ["graphs.errors"]}
