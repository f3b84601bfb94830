"""YAML configuration the seeds ask for: playbook sections (seed 000 §8) and GRACE (seed 002 §6).

Loaded and validated once at start-up; a bad file raises `ConfigError` naming the file and
the path inside it, so the service refuses to start rather than fail on a request.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import msgspec
import yaml

from graphs.llm.config import ConfigError

SECTIONS_FILE = "sections.yaml"
GRACE_FILE = "grace_config.yml"
ANY_SECTION = "*"

T = TypeVar("T")


class SectionDefinition(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A playbook section: its name, what belongs in it and the id prefix of its bullets."""

    name: str
    description: str = ""
    prefix: str | None = None


class GraceThresholds(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Intervention thresholds; SILENT > NOTIFY > CONFIRM must hold."""

    silent: float = 0.9
    notify: float = 0.7
    confirm: float = 0.4


class GraceFeedback(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """How far user feedback may move the thresholds."""

    step: float = 0.02
    min_confirm: float = 0.2
    max_silent: float = 0.98


class GraceLLM(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Model settings specific to GRACE (the model itself is the service's `LLM_PROVIDER` / `LLM_MODEL`)."""

    temperature: Annotated[float, msgspec.Meta(ge=0.0, le=2.0)] = 0.0


class GracePenalties(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Multipliers applied to confidence on bad outcomes."""

    zero_hits: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 0.5
    tool_failure: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 0.6


class GraceReplan(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Replanning bounds."""

    max_replans: Annotated[int, msgspec.Meta(ge=0, le=10)] = 2


class GracePlanner(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Planner settings (seed 002 §8.1): below `complexity_threshold` a question gets the search → answer template."""

    complexity_threshold: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 0.5
    max_steps: Annotated[int, msgspec.Meta(ge=2, le=32)] = 8
    max_searches: Annotated[int, msgspec.Meta(ge=1, le=16)] = 4


class GraceExecutor(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """How much of each search result the executor asks for, keeps in state and puts in an answer."""

    top_k: Annotated[int, msgspec.Meta(ge=1, le=100)] = 5
    max_hits_per_step: Annotated[int, msgspec.Meta(ge=1, le=50)] = 8
    snippet_chars: Annotated[int, msgspec.Meta(ge=100, le=20_000)] = 1200
    answer_sentences: Annotated[int, msgspec.Meta(ge=1, le=10)] = 3


class GraceConfidence(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Normalisation of the confidence factors: `target_hits` hits count as a full hit-count factor."""

    target_hits: Annotated[int, msgspec.Meta(ge=1, le=100)] = 3


class CollectionInfo(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A searchable collection the planner may choose."""

    name: str
    description: str = ""


GRACE_FACTORS = ("hit_count", "max_score", "mean_score", "score_variance", "source_agreement", "llm_self_eval")
"""The confidence factors a weight may name (seed 002 §8.3)."""
GRACE_WEIGHTED_STEPS = ("rag_search", "reasoning")
"""Step types with their own weights; `ask_user` results are the user's own words (confidence 1)."""
DEFAULT_CONFIDENCE_WEIGHTS: dict[str, dict[str, float]] = {
    "rag_search": {
        "hit_count": 0.2,
        "max_score": 0.3,
        "mean_score": 0.2,
        "score_variance": 0.1,
        "source_agreement": 0.2,
        "llm_self_eval": 0.0,
    },
    "reasoning": {
        "hit_count": 0.1,
        "max_score": 0.2,
        "mean_score": 0.1,
        "score_variance": 0.0,
        "source_agreement": 0.2,
        "llm_self_eval": 0.4,
    },
}


class GraceConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The whole of `config/grace_config.yml` after `GRACE_` overrides."""

    llm: GraceLLM = GraceLLM()
    thresholds: GraceThresholds = GraceThresholds()
    feedback: GraceFeedback = GraceFeedback()
    confidence_weights: dict[str, dict[str, float]] = msgspec.field(
        default_factory=lambda: {k: dict(v) for k, v in DEFAULT_CONFIDENCE_WEIGHTS.items()}
    )
    penalties: GracePenalties = GracePenalties()
    replan: GraceReplan = GraceReplan()
    default_collections: list[CollectionInfo] = msgspec.field(default_factory=list)
    planner: GracePlanner = GracePlanner()
    executor: GraceExecutor = GraceExecutor()
    confidence: GraceConfidence = GraceConfidence()

    def weights_for(self, step_type: str) -> dict[str, float]:
        """The factor weights of a step type (normalised to sum 1); the search weights for unlisted types."""
        return self.confidence_weights.get(step_type) or DEFAULT_CONFIDENCE_WEIGHTS["rag_search"]


def read_text(path: Path | Traversable) -> str:
    """A configuration or data file as UTF-8 text; any problem reading it is a one-line `ConfigError`.

    Every file the service reads at start-up goes through here (YAML configuration, packaged cue
    tables, prompts), so a file saved as Shift_JIS, a directory where a file should be or an
    unreadable file stops the start-up with a line naming the file, never a traceback.
    """
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start}); save it as UTF-8"
        ) from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror or type(exc).__name__})") from None


def read_yaml(path: Path | Traversable) -> Any:
    """A YAML file's content (`read_text`'s checks, then the parser's first line on a syntax error)."""
    text = read_text(path)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({' '.join(str(exc).split())[:300]})") from None


def read_typed(path: Path | Traversable, shape: type[T]) -> T:
    """A YAML file converted to `shape`; a wrong type or a missing key names the file and the path inside it."""
    try:
        return msgspec.convert(read_yaml(path), shape)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def load_sections(config_dir: Path) -> dict[str, list[SectionDefinition]]:
    """Section definitions per dataset; `default` covers datasets not listed."""
    path = config_dir / SECTIONS_FILE
    raw = read_yaml(path)
    try:
        sections = msgspec.convert(raw, dict[str, list[SectionDefinition]])
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    for dataset, items in sections.items():
        names = [s.name for s in items]
        if len(names) != len(set(names)):
            raise ConfigError(f"{path}: dataset {dataset!r} lists a section twice")
    return sections


GRACE_ENV_PREFIX = "GRACE_"
"""Variables of the form `GRACE_<SECTION>__<KEY>` override `grace_config.yml`; other `GRACE_` names are not read."""


def grace_overrides(env: Mapping[str, str]) -> dict[str, list[str]]:
    """The override variables, each with the path it sets: `GRACE_A__B` (two underscores between parts) sets a.b.

    Only that form: a platform sets `GRACE_`-prefixed variables of its own (Kubernetes injects
    `GRACE_SERVICE_HOST` and `GRACE_PORT` into every pod for a Service named grace), and reading every
    `GRACE_` name as an override stopped the service with "unknown field service_host".
    """
    overrides: dict[str, list[str]] = {}
    for name in sorted(env):
        parts = name[len(GRACE_ENV_PREFIX) :].lower().split("__") if name.startswith(GRACE_ENV_PREFIX) else []
        if len(parts) >= 2 and all(parts):
            overrides[name] = parts
    return overrides


def ignored_grace_variables(env: Mapping[str, str]) -> list[str]:
    """`GRACE_` names that look like a mistyped override (a section, then one underscore): worth a warning.

    `GRACE_THRESHOLDS_SILENT` is not read; `GRACE_SERVICE_HOST` names no section and is not reported.
    """
    overrides = grace_overrides(env)
    sections = [f"{GRACE_ENV_PREFIX}{field.upper()}_" for field in GraceConfig.__struct_fields__]
    return [name for name in sorted(env) if name not in overrides and name.upper().startswith(tuple(sections))]


def _apply_env_overrides(raw: dict[str, Any], overrides: Mapping[str, list[str]], env: Mapping[str, str]) -> None:
    """Each override sets its path in `raw` (values parsed as YAML scalars)."""
    for key, path in overrides.items():
        value = env[key]
        node = raw
        for part in path[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"{key}: {'.'.join(path[:-1])} is not a section of {GRACE_FILE}")
            node = child
        try:
            node[path[-1]] = yaml.safe_load(value)
        except yaml.YAMLError:
            raise ConfigError(f"{key}={value!r} is not a valid value") from None


def _blame(path: Path, file_raw: dict[str, Any], overrides: Mapping[str, list[str]], env: Mapping[str, str]) -> str:
    """Who made the merged configuration invalid: the file itself, else the override variables that do on their own."""
    try:
        msgspec.convert(file_raw, GraceConfig)
    except msgspec.ValidationError:
        return str(path)
    culprits = []
    for key, keys in overrides.items():
        alone = copy.deepcopy(file_raw)
        _apply_env_overrides(alone, {key: keys}, env)
        try:
            msgspec.convert(alone, GraceConfig)
        except msgspec.ValidationError:
            culprits.append(f"{key}={env[key]!r}")
    return ", ".join(culprits) or f"{path} with {', '.join(overrides)}"


def load_grace_config(config_dir: Path, env: Mapping[str, str]) -> GraceConfig:
    """The GRACE configuration with `GRACE_<SECTION>__<KEY>` overrides, validated (threshold order, ranges).

    An error names what is responsible: the file, or the override variables (with the file when a check
    spans both, such as the threshold order).
    """
    path = config_dir / GRACE_FILE
    file_raw = read_yaml(path) or {}
    if not isinstance(file_raw, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    overrides = grace_overrides(env)
    raw = copy.deepcopy(file_raw)
    _apply_env_overrides(raw, overrides, env)
    try:
        config = msgspec.convert(raw, GraceConfig)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{_blame(path, file_raw, overrides, env)}: {exc}") from None

    def where(section: str) -> str:
        """The file, and the variables overriding `section` if any (a check across a section may blame either)."""
        touching = [key for key, keys in overrides.items() if keys[0] == section]
        return f"{path} with {', '.join(touching)}" if touching else str(path)

    t = config.thresholds
    if not 0.0 <= t.confirm < t.notify < t.silent <= 1.0:
        raise ConfigError(
            f"{where('thresholds')}: thresholds must satisfy 0 <= confirm < notify < silent <= 1 "
            f"(got confirm={t.confirm}, notify={t.notify}, silent={t.silent})"
        )
    f = config.feedback
    if not (0.0 < f.step <= 0.2 and f.min_confirm >= 0.0 and f.max_silent <= 1.0):
        raise ConfigError(f"{where('feedback')}: feedback needs 0 < step <= 0.2, min_confirm >= 0 and max_silent <= 1")
    weights = _normalised_weights(where("confidence_weights"), config.confidence_weights)
    return msgspec.structs.replace(config, confidence_weights=weights)


def _normalised_weights(path: str, weights: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """Check the weight table names known steps and factors, and scale each step's weights to sum 1."""
    merged = {k: dict(v) for k, v in DEFAULT_CONFIDENCE_WEIGHTS.items()} | weights
    normalised: dict[str, dict[str, float]] = {}
    for step, table in merged.items():
        if step not in GRACE_WEIGHTED_STEPS:
            raise ConfigError(f"{path}: confidence_weights.{step}: not a step type ({', '.join(GRACE_WEIGHTED_STEPS)})")
        unknown = sorted(set(table) - set(GRACE_FACTORS))
        if unknown:
            raise ConfigError(f"{path}: confidence_weights.{step}: unknown factor {unknown[0]!r}")
        if any(w < 0 for w in table.values()) or sum(table.values()) <= 0:
            raise ConfigError(f"{path}: confidence_weights.{step}: weights must be >= 0 with a positive sum")
        total = sum(table.values())
        normalised[step] = {name: table.get(name, 0.0) / total for name in GRACE_FACTORS}
    return normalised
