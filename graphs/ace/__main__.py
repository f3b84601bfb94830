"""Command line for the PlaybookStore: import an ACE text playbook, export one, or list what is stored.

    python -m graphs.ace import ../shared/data/ace-appworld/appworld_online_trained_playbook.txt --dataset appworld
    python -m graphs.ace export --dataset appworld > playbook.txt
    python -m graphs.ace list

`--data-dir` and `--config-dir` default to PLAYBOOK_DATA_DIR and CONFIG_DIR, read by the code the service reads
them with (`graphs/directory_settings.py`: blanks around a value dropped, empty meaning the default, the same
checks), so the command line works on the directory `/workflow/run` reads.
The checks are the HTTP endpoints' (`graphs/ace/playbook/import_export.py`): an import must parse and fit the
dataset's sections in `config/sections.yaml`; a file with no bullets would empty the stored playbook and
is refused unless `--allow-empty`; exporting a dataset that is not stored is an error, not empty output.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from graphs.ace.checks import check_dataset_spelling
from graphs.ace.playbook.import_export import export_text, parse_import, store_replacing
from graphs.ace.playbook.sections import section_rules
from graphs.ace.playbook.store import PlaybookStore, PlaybookStoreError
from graphs.config_files import load_sections
from graphs.directory_settings import load_config_dir, load_playbook_data_dir
from graphs.errors import InvalidInput
from graphs.llm.config import ConfigError


def _parser() -> argparse.ArgumentParser:
    """The usage, kept apart from running so `main` reads as the three commands and their failures."""
    parser = argparse.ArgumentParser(prog="python -m graphs.ace", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["import", "export", "list"])
    parser.add_argument("file", nargs="?", type=Path, help="the ACE text playbook to import")
    parser.add_argument("--dataset", default="appworld")
    parser.add_argument(
        "--allow-empty", action="store_true", help="let an import with no bullets replace the stored playbook"
    )
    parser.add_argument("--data-dir", type=Path, help="default: PLAYBOOK_DATA_DIR, as the service reads it")
    parser.add_argument("--config-dir", type=Path, help="default: CONFIG_DIR, as the service reads it")
    return parser


def _store_with_service_directories(args: argparse.Namespace) -> PlaybookStore:
    """The store, once the directories not given are filled in as the service reads them (one reading of each).

    Read with `os.environ.get`, `PLAYBOOK_DATA_DIR="/srv/x "` wrote to a directory with a trailing space while
    the service used `/srv/x`. The reading is `graphs.directory_settings`, which the service's settings import.

    Raises:
        ConfigError: The variable is set to something the service would refuse to start with.
    """
    if args.data_dir is None:
        args.data_dir = load_playbook_data_dir()
    if args.config_dir is None:
        args.config_dir = load_config_dir()
    return PlaybookStore(args.data_dir)


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
    try:
        store = _store_with_service_directories(args)
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
