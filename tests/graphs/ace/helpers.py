"""Builders for ACE tests: bullets, playbooks and the real AppWorld playbooks.

The ACE endpoints are served by the shared app: use the `client` / `make_app` fixtures (ACE's options
come from its settings, e.g. `make_app({"PLAYBOOK_DATA_DIR": ...})`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from contracts.ace import Bullet, Playbook
from graphs.ace.playbook.text_format import parse_playbook
from tests.support.shared_data import ACE_APPWORLD, require_shared

ACE_DATA = ACE_APPWORLD
INITIAL = ACE_DATA / "appworld_initial_playbook.txt"
OFFLINE = ACE_DATA / "appworld_offline_trained_no_gt_playbook.txt"
ONLINE = ACE_DATA / "appworld_online_trained_playbook.txt"
REAL_PLAYBOOKS = [INITIAL, OFFLINE, ONLINE]


def read_text(path: Path) -> str:
    """A playbook file as written (no newline translation); a missing ../shared file fails the test by name."""
    with require_shared(path).open(encoding="utf-8", newline="") as handle:
        return handle.read()


def real_playbook(path: Path = ONLINE) -> Playbook:
    """One of the real AppWorld playbooks, parsed."""
    return parse_playbook(read_text(path))


def bullet(bullet_id: str, content: str, section: str = "general", **fields: Any) -> Bullet:
    """A bullet with only what a test cares about."""
    return Bullet(id=bullet_id, section=section, content=content, **fields)


def playbook(*bullets: Bullet) -> Playbook:
    """A playbook of these bullets."""
    return Playbook(bullets=list(bullets))


def as_json(value: Any) -> Any:
    """A Struct as the JSON builtins a client would send."""
    return msgspec.to_builtins(value)


JAPANESE_PLAYBOOK = playbook(
    bullet("gen-00001", "東京タワーの高さは333メートルである。", keywords=["東京タワー"]),
    bullet("gen-00002", "富士山の標高は3776メートルで、日本一高い山である。"),
    bullet("gen-00003", "Always paginate: loop over page_index until an API returns an empty page."),
    bullet("gen-00004", "Use show_venmo_balance before approving a payment request."),
)
"""Mixed Japanese and English bullets in the permissive `default` dataset."""
