"""Prompt templates live as text files under `prompts/<agent>/`; this reads them once per process.

File convention: a prompt file may open with a header block of lines starting with `#` that documents
its variables (e.g. `# {errors}: the problems found, one per line`). That header, and the blank lines
right after it, are stripped before use, so the model never sees them. Only the *leading* `#` lines
go: a `#` further down (a Markdown heading inside the prompt) is kept. Variables are `{name}`
placeholders in `str.format` syntax, as in the seeds' templates (seed 001): `render_prompt` fills them,
and literal braces (JSON examples) are doubled, `{{` and `}}`. Values are never parsed as templates, so
untrusted text with braces in it is safe to substitute.
"""

from __future__ import annotations

import re
import string
from functools import cache
from pathlib import Path

from graphs.config_files import read_text
from graphs.directory_settings import DIRECTORY_DEFAULTS
from graphs.llm.config import ConfigError

PROMPTS_DIR = Path(DIRECTORY_DEFAULTS["PROMPTS_DIR"])
"""The repository's `prompts/` directory, the default place to look (PROMPTS_DIR's default, defined once)."""


def strip_header(text: str) -> str:
    """Drop the leading `#` comment block (and blank lines after it) and surrounding whitespace."""
    lines = text.splitlines()
    start = 0
    while start < len(lines) and (lines[start].startswith("#") or not lines[start].strip()):
        start += 1
    return "\n".join(lines[start:]).strip()


@cache
def load_prompt(name: str, prompts_dir: Path | None = None) -> str:
    """The text of prompt `name` (e.g. `"common/reask"`; `.txt` is implied), header stripped.

    Found prompts are read once and cached for the life of the process (per name and directory):
    prompts are part of the deployed image, so they do not change under a running service, and a
    think step should not pay path resolution and a `stat` for every prompt it renders. A missing
    prompt is not cached: it raises each time (and is found once it exists).

    Args:
        name: Path of the prompt relative to the prompts directory, with or without `.txt`.
        prompts_dir: Where to look instead of the repository's `prompts/` (tests, dataset overrides).

    Raises:
        FileNotFoundError: No such prompt, or `name` points outside the prompts directory.
    """
    root = (prompts_dir or PROMPTS_DIR).resolve()
    path = (root / name).resolve()
    if path.suffix != ".txt":
        path = path.with_name(path.name + ".txt")
    if not path.is_relative_to(root) or not path.is_file():
        raise FileNotFoundError(f"no prompt {name!r} under {root}")
    return strip_header(read_text(path))


def render_prompt(name: str, prompts_dir: Path | None = None, **variables: object) -> str:
    """Load prompt `name` and fill its `{variables}` (`str.format` syntax).

    Raises:
        FileNotFoundError: No such prompt.
        KeyError: The template names a variable that was not given.
    """
    return load_prompt(name, prompts_dir).format(**variables)


def template_problem(text: str) -> str | None:
    """Why `text` cannot be filled by `render_prompt` (a lone brace, `{}`, `{"json": ...}`), or None."""
    try:
        fields = [field for _, field, _, _ in string.Formatter().parse(text) if field is not None]
    except ValueError as exc:
        return f"not a valid template ({exc}; write literal braces as {{{{ and }}}})"
    for field in fields:
        name = re.split(r"[.\[]", field, maxsplit=1)[0]
        if not name.isidentifier():
            shown = field if len(field) <= 40 else field[:40] + "…"
            return f"placeholder {{{shown}}} is not a variable name (write literal braces as {{{{ and }}}})"
    return None


def check_prompts(prompts_dir: Path) -> None:
    """Start-up check of `PROMPTS_DIR`: every prompt the agents use is there, and every prompt file is usable.

    Prompts are otherwise read on first use; a missing file, one saved in another encoding or a template
    with a stray brace would fail requests long after a deployment looked healthy.

    Raises:
        ConfigError: One line naming the file and the problem.
    """
    root = prompts_dir.resolve()
    missing = sorted(
        str(p.relative_to(PROMPTS_DIR))
        for p in PROMPTS_DIR.rglob("*.txt")
        if not (root / p.relative_to(PROMPTS_DIR)).is_file()
    )
    if missing:
        raise ConfigError(
            f"PROMPTS_DIR={str(root)!r} lacks {len(missing)} prompt(s) the agents use: {', '.join(missing[:5])}"
        )
    for path in sorted(root.rglob("*.txt")):
        problem = template_problem(strip_header(read_text(path)))
        if problem is not None:
            raise ConfigError(f"{path}: {problem}")
