"""The directory settings, `CONFIG_DIR`, `PROMPTS_DIR` and `PLAYBOOK_DATA_DIR`: their defaults and their reading.

The service (`librarian_svc/settings.py`, whose `ENV_DEFAULTS` takes these three from `DIRECTORY_DEFAULTS`) and
the playbook command line (`python -m graphs.ace`) both read them here, so a value names the same directory for
both and one the service would refuse stops the command line with the same line. It lives in `graphs`, not in
the service, because `graphs` never imports `librarian_svc`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from graphs.llm.config import ConfigError

PROJECT_ROOT = Path(__file__).resolve().parent.parent
"""The repository (in the image, `/app`): the directory defaults are under it, whatever the working directory."""

DIRECTORY_DEFAULTS: dict[str, str] = {
    "CONFIG_DIR": str(PROJECT_ROOT / "config"),
    "PROMPTS_DIR": str(PROJECT_ROOT / "prompts"),
    "PLAYBOOK_DATA_DIR": str(PROJECT_ROOT / "data" / "playbooks"),
}
"""The defaults of the directory settings (the README's table states them as `<project>/...`)."""


def path_setting(env: Mapping[str, str], name: str) -> Path:
    """A path setting; set to nothing (empty or blanks) it is unset, its default, as an empty URL setting is.

    `Path("")` is the working directory: `PLAYBOOK_DATA_DIR=` once saved playbooks wherever the process started.
    """
    return Path(env.get(name, "").strip() or DIRECTORY_DEFAULTS[name])


def existing_dir(env: Mapping[str, str], name: str) -> Path:
    """A directory setting that must name a directory now (`CONFIG_DIR`, `PROMPTS_DIR`), made absolute.

    Raises:
        ConfigError: It is not a directory.
    """
    path = path_setting(env, name)
    if not path.is_dir():
        raise ConfigError(f"{name}={str(path)!r} is not a directory")
    return path.resolve()  # absolute: what it names must not change with the working directory


def data_dir(env: Mapping[str, str], name: str) -> Path:
    """A directory created on first save: it may be absent, but neither a file nor under one (it never could be).

    One the process cannot write is not an error here: reading playbooks works, and a read-only root file system
    (`docker run --read-only`) holds the default. The service warns at start-up (`PlaybookStore.unwritable_reason`).

    Raises:
        ConfigError: It is a file, or under one.
    """
    path = path_setting(env, name)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{name}={str(path)!r} is a file, not a directory")
    blocker = next((parent for parent in path.resolve().parents if parent.exists()), None)
    if blocker is not None and not blocker.is_dir():
        raise ConfigError(f"{name}={str(path)!r} cannot be created: {blocker} is a file")
    return path.resolve()  # absolute: what it names must not change with the working directory


def load_playbook_data_dir(env: Mapping[str, str] | None = None) -> Path:
    """`PLAYBOOK_DATA_DIR`, for the service and the command line `python -m graphs.ace` alike."""
    return data_dir(os.environ if env is None else env, "PLAYBOOK_DATA_DIR")


def load_config_dir(env: Mapping[str, str] | None = None) -> Path:
    """`CONFIG_DIR`, for the service and the command line `python -m graphs.ace` alike."""
    return existing_dir(os.environ if env is None else env, "CONFIG_DIR")


def load_prompts_dir(env: Mapping[str, str] | None = None) -> Path:
    """`PROMPTS_DIR` (only the service reads it)."""
    return existing_dir(os.environ if env is None else env, "PROMPTS_DIR")
