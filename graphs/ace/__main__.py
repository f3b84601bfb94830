"""Command line for the PlaybookStore: import an ACE text playbook, export one, or list what is stored.

    python -m graphs.ace import ../shared/data/ace-appworld/appworld_online_trained_playbook.txt --dataset appworld
    python -m graphs.ace export --dataset appworld > playbook.txt
    python -m graphs.ace list

`--data-dir` defaults to PLAYBOOK_DATA_DIR, else `data/playbooks` in the project (what `/workflow/run` reads,
the service's own default for PLAYBOOK_DATA_DIR).
An import is checked against the dataset's sections in `config/sections.yaml` before it is saved.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from graphs.ace.playbook_checks import playbook_problems
from graphs.ace.playbook_store import PlaybookStore, PlaybookStoreError
from graphs.ace.playbook_text import PlaybookTextError, export_playbook, parse_playbook
from graphs.ace.sections import section_rules
from graphs.config_files import load_sections
from graphs.llm.config import ConfigError

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def main(argv: list[str] | None = None) -> int:
    """Run one command; the exit status is 0 on success, 1 on a bad file or name, 2 on bad usage."""
    parser = argparse.ArgumentParser(prog="python -m graphs.ace", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["import", "export", "list"])
    parser.add_argument("file", nargs="?", type=Path, help="the ACE text playbook to import")
    parser.add_argument("--dataset", default="appworld")
    parser.add_argument(
        "--data-dir", type=Path, default=Path(os.environ.get("PLAYBOOK_DATA_DIR", PROJECT_ROOT / "data" / "playbooks"))
    )
    parser.add_argument("--config-dir", type=Path, default=Path(os.environ.get("CONFIG_DIR", PROJECT_ROOT / "config")))
    args = parser.parse_args(argv)
    store = PlaybookStore(args.data_dir)
    try:
        match args.command:
            case "import":
                if args.file is None:
                    parser.error("import needs the text file")
                with args.file.open(encoding="utf-8", newline="") as handle:
                    playbook = parse_playbook(handle.read())
                problems = playbook_problems(playbook, section_rules(load_sections(args.config_dir), args.dataset), "$")
                if problems:
                    print(f"{args.file}: {problems[0].path}: {problems[0].message}", file=sys.stderr)
                    return 1
                store.save(args.dataset, playbook)
                print(f"saved {len(playbook.bullets)} bullets to {store.path_for(args.dataset)}")
            case "export":
                sys.stdout.write(export_playbook(store.load(args.dataset)))
            case "list":
                for path in sorted(args.data_dir.glob("*.json")):
                    print(path.stem)
    except (OSError, PlaybookTextError, PlaybookStoreError, ConfigError) as exc:
        print(f"python -m graphs.ace {args.command}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
