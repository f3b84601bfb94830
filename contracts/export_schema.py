"""Render the JSON Schemas of `registry.EXPORTED`; `python -m contracts.export_schema` writes them.

The rendering is deterministic (sorted keys, trailing newline) so the committed files can
be compared byte for byte with what the code produces.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import msgspec

from contracts.registry import EXPORTED

SCHEMA_DIR = Path(__file__).parent / "schema"


def render_schemas() -> dict[str, str]:
    """Map each exported type's file name to its JSON Schema text."""
    rendered: dict[str, str] = {}
    for name, tp in EXPORTED.items():
        schema = msgspec.json.schema(tp)
        schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
        schema["title"] = name
        rendered[f"{name}.json"] = json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    return rendered


def write_schemas(directory: Path = SCHEMA_DIR) -> list[Path]:
    """Replace the schema directory's contents with freshly rendered schemas."""
    directory.mkdir(parents=True, exist_ok=True)
    rendered = render_schemas()
    for stale in directory.glob("*.json"):
        if stale.name not in rendered:
            stale.unlink()
    written = []
    for file_name, text in rendered.items():
        path = directory / file_name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def drift(directory: Path = SCHEMA_DIR) -> list[str]:
    """Names of schema files that are missing, stale or extra compared with the code."""
    rendered = render_schemas()
    problems = [
        name
        for name, text in rendered.items()
        if not (directory / name).is_file() or (directory / name).read_text(encoding="utf-8") != text
    ]
    problems += [p.name for p in directory.glob("*.json") if p.name not in rendered]
    return sorted(problems)


def main(argv: list[str]) -> int:
    """`--check` reports drift (exit 1); otherwise (re)write the schemas."""
    if "--check" in argv:
        stale = drift()
        if stale:
            print(f"contracts/schema is out of date ({', '.join(stale)}): run `make schema`", file=sys.stderr)
            return 1
        print(f"contracts/schema matches the code ({len(render_schemas())} schemas)")
        return 0
    paths = write_schemas()
    print(f"wrote {len(paths)} schemas to {SCHEMA_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
