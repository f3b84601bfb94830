"""An attribute docstring sits right under the constant it describes.

A constant once went in between `LOCK_WAIT_UNBOUNDED_S` and its docstring in the playbook store: the
docstring then followed another docstring, describing nothing (and `LOCK_WAIT_UNBOUNDED_S` had none).
"""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("contracts", "graphs", "librarian_svc")


def _is_string(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def strays(path: Path) -> list[int]:
    """Lines of string statements that follow another string statement, so describe nothing."""
    lines: list[int] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            lines += [b.lineno for a, b in itertools.pairwise(body) if _is_string(a) and _is_string(b)]
    return lines


@pytest.mark.parametrize("package", PACKAGES)
def test_no_docstring_follows_another(package: str) -> None:
    found = {path.relative_to(ROOT).as_posix(): strays(path) for path in sorted((ROOT / package).rglob("*.py"))}
    assert {file: lines for file, lines in found.items() if lines} == {}


def test_the_check_sees_a_docstring_separated_from_its_constant(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text('WAIT_S = 60.0\nMODE = 0o666\n"""The mode."""\n"""How long to wait."""\n', encoding="utf-8")
    assert strays(source) == [4]
