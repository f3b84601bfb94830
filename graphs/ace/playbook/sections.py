"""Which sections a dataset's playbook may use and the id prefix of each (seed 000 §8, `config/sections.yaml`).

A dataset listed in the file allows exactly its sections; a dataset not listed falls back to `default`,
whose `"*"` entry makes it permissive. Prefixes come from the file (`prefix: shr`) or, for sections the
file does not name, from a slug of the section name, so ids stay `<prefix>-<nnnnn>` everywhere.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass

from contracts.ace import AceCurateRequest, AceReflectRequest
from graphs.config_files import ANY_SECTION, SectionDefinition
from graphs.text.normalize import normalize

DEFAULT_DATASET = "default"
FALLBACK_SECTION = "others"
"""Where the curator files a lesson no section fits, when the dataset defines it."""
PERMISSIVE_FALLBACK_SECTION = "general"
"""The same for a permissive dataset with an empty playbook."""

_NOT_SLUG = re.compile(r"[^a-z0-9]+")


def slug_prefix(section: str) -> str:
    """An id prefix made from a section name: lower-case ASCII words joined by `-` (at most 24 characters).

    A name with no ASCII letters or digits (e.g. Japanese) gets `s` plus a crc32 of the name, so the
    prefix is still stable across processes and distinct per section.
    """
    slug = _NOT_SLUG.sub("-", normalize(section)).strip("-")[:24].strip("-")
    return slug or f"s{zlib.crc32(section.encode('utf-8', 'surrogatepass')):08x}"


@dataclass(frozen=True)
class SectionRules:
    """The sections one dataset allows."""

    dataset: str
    definitions: tuple[SectionDefinition, ...]
    permissive: bool

    @property
    def names(self) -> list[str]:
        """The named sections, in configuration order (empty for a purely permissive dataset)."""
        return [d.name for d in self.definitions]

    def allows(self, section: str) -> bool:
        """Whether a bullet may live in `section`."""
        return self.permissive or section in self.names

    def prefix(self, section: str) -> str:
        """The id prefix for new bullets of `section`."""
        for definition in self.definitions:
            if definition.name == section and definition.prefix:
                return definition.prefix
        return slug_prefix(section)

    def fallback_section(self) -> str:
        """Where a lesson goes when nothing better is known."""
        if FALLBACK_SECTION in self.names:
            return FALLBACK_SECTION
        if self.permissive or not self.names:
            return PERMISSIVE_FALLBACK_SECTION
        return self.names[-1]

    def describe(self) -> str:
        """One line per section for a prompt (`- name: description`), or a note that any name is allowed."""
        lines = [f"- {d.name}: {d.description}".rstrip(": ") for d in self.definitions]
        if self.permissive:
            lines.append("- (any other section name is allowed; prefer snake_case)")
        return "\n".join(lines)


def section_rules(sections: dict[str, list[SectionDefinition]], dataset: str) -> SectionRules:
    """The rules for `dataset`: its own list, else `default`'s, else anything goes."""
    chosen = sections.get(dataset)
    if chosen is None:
        chosen = sections.get(DEFAULT_DATASET)
    if chosen is None:
        return SectionRules(dataset=dataset, definitions=(), permissive=True)
    named = tuple(d for d in chosen if d.name != ANY_SECTION)
    return SectionRules(dataset=dataset, definitions=named, permissive=any(d.name == ANY_SECTION for d in chosen))


def configured_spelling(sections: dict[str, list[SectionDefinition]], dataset: str) -> str | None:
    """The configured dataset that `dataset` spells with other letter case, when `dataset` is not configured itself.

    Dataset names are case-sensitive, so `AppWorld` is not `appworld`: it would get `default`'s permissive
    rules, and the workflow another (missing, so empty) stored playbook. The checks refuse it instead.
    """
    if dataset in sections:
        return None
    folded = dataset.casefold()
    return next((name for name in sections if name.casefold() == folded), None)


def reflect_dataset(request: AceReflectRequest) -> str:
    """The dataset whose rules apply: the request's, else the trajectory's."""
    return request.dataset or request.trajectory.dataset


def curate_dataset(request: AceCurateRequest) -> str:
    """The dataset whose rules apply: the request's, else the trajectory's, else the reflection's."""
    dataset = request.dataset or (request.trajectory.dataset if request.trajectory else None)
    return dataset or request.reflection.trajectory_dataset
