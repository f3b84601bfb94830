"""Command line for the PlaybookStore: import an ACE text playbook, export one, or list what is stored.

    python -m graphs.ace import ../shared/data/ace-appworld/appworld_online_trained_playbook.txt --dataset appworld
    python -m graphs.ace export --dataset appworld > playbook.txt
    python -m graphs.ace list

`--data-dir` defaults to PLAYBOOK_DATA_DIR, else `data/playbooks` in the project (what `/workflow/run` reads,
the service's own default for PLAYBOOK_DATA_DIR).
The checks are the HTTP endpoints' (`graphs/ace/playbook/import_export.py`): an import must parse and fit the
dataset's sections in `config/sections.yaml`; a file with no bullets would empty the stored playbook and
is refused unless `--allow-empty`; exporting a dataset that is not stored is an error, not empty output.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from graphs.ace.checks import check_dataset_spelling
from graphs.ace.playbook.import_export import export_text, parse_import, store_replacing
from graphs.ace.playbook.sections import section_rules
from graphs.ace.playbook.store import PlaybookStore, PlaybookStoreError
from graphs.config_files import load_sections
from graphs.errors import InvalidInput
from graphs.llm.config import ConfigError

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def _parser() -> argparse.ArgumentParser:
    """The usage, kept apart from running so `main` reads as the three commands and their failures."""
    parser = argparse.ArgumentParser(prog="python -m graphs.ace", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["import", "export", "list"])
    parser.add_argument("file", nargs="?", type=Path, help="the ACE text playbook to import")
    parser.add_argument("--dataset", default="appworld")
    parser.add_argument(
        "--allow-empty", action="store_true", help="let an import with no bullets replace the stored playbook"
    )
    parser.add_argument(
        "--data-dir", type=Path, default=Path(os.environ.get("PLAYBOOK_DATA_DIR", PROJECT_ROOT / "data" / "playbooks"))
    )
    parser.add_argument("--config-dir", type=Path, default=Path(os.environ.get("CONFIG_DIR", PROJECT_ROOT / "config")))
    return parser


def _import(args: argparse.Namespace, store: PlaybookStore) -> None:
    """Replace the dataset's stored playbook with the file's, after the same checks as the HTTP import."""
    text = args.file.read_bytes().decode("utf-8")
    rules = section_rules(load_sections(args.config_dir), args.dataset)
    playbook = parse_import(text, rules, allow_empty=args.allow_empty)
    store_replacing(store, args.dataset, playbook)
    print(f"saved {len(playbook.bullets)} bullets to {store.path_for(args.dataset)}")


def main(argv: list[str] | None = None) -> int:
    """Run one command; the exit status is 0 on success, 1 on a bad file or name, 2 on bad usage."""
    parser = _parser()
    args = parser.parse_args(argv)
    store = PlaybookStore(args.data_dir)
    try:
        if args.command != "list":  # the server's check, a name stored under aside
            stored = store.datasets
            check_dataset_spelling(
                [("--dataset", args.dataset)], load_sections(args.config_dir), lambda d: d in stored()
            )
        match args.command:
            case "import":
                if args.file is None:
                    parser.error("import needs the text file")
                _import(args, store)
            case "export":
                sys.stdout.write(export_text(store, args.dataset))
            case "list":
                for dataset in store.datasets():
                    print(dataset)
    except InvalidInput as exc:
        where = f"{args.file}: " if args.command == "import" else ""
        print(f"python -m graphs.ace {args.command}: {where}{exc.message}", file=sys.stderr)
        return 1
    except UnicodeDecodeError as exc:
        print(f"python -m graphs.ace {args.command}: {args.file}: not UTF-8 text (byte {exc.start})", file=sys.stderr)
        return 1
    except (OSError, PlaybookStoreError, ConfigError) as exc:
        print(f"python -m graphs.ace {args.command}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
