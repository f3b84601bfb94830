"""structlog configuration: JSON lines for Cloud Logging, readable console output in development.

Everything that logs (our code, uvicorn, LangChain through the stdlib) ends up in one stream
with the request's context (request_id, trace) bound through contextvars. Secrets never reach
the output: a processor drops any key that looks like a credential or a state signature.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping, MutableMapping
from typing import Any

import structlog

_SEVERITY = {
    "debug": "DEBUG",
    "info": "INFO",
    "warning": "WARNING",
    "warn": "WARNING",
    "error": "ERROR",
    "exception": "ERROR",
    "critical": "CRITICAL",
}
_SECRET_MARKERS = ("api_key", "apikey", "secret", "password", "signature", "authorization", "signing_key", "token=")


def _is_secret_key(key: str) -> bool:
    lowered = key.lower()
    return any(marker in lowered for marker in _SECRET_MARKERS)


def redact_secrets(_: Any, __: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """Drop values whose key names a credential or signature, at any nesting of dicts."""

    def scrub(mapping: Mapping[str, Any]) -> dict[str, Any]:
        clean: dict[str, Any] = {}
        for key, value in mapping.items():
            if _is_secret_key(str(key)):
                clean[key] = "[redacted]"
            elif isinstance(value, Mapping):
                clean[key] = scrub(value)
            else:
                clean[key] = value
        return clean

    return scrub(event_dict)


def cloud_logging_fields(_: Any, method_name: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """Rename structlog's keys to the ones Cloud Logging reads (`message`, `severity`)."""
    event_dict["message"] = event_dict.pop("event", "")
    level = event_dict.pop("level", method_name)
    event_dict["severity"] = _SEVERITY.get(str(level).lower(), "DEFAULT")
    return event_dict


def configure_logging(log_format: str, level: str) -> None:
    """Configure structlog and route the stdlib loggers (uvicorn, httpx, langchain) through it."""
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.format_exc_info if log_format == "json" else structlog.processors.StackInfoRenderer(),
        redact_secrets,
    ]
    renderer: Any
    if log_format == "json":
        shared.append(cloud_logging_fields)
        renderer = structlog.processors.JSONRenderer(ensure_ascii=False)
    else:
        # Plain tracebacks: the rich ones print local variables, which may hold request headers.
        renderer = structlog.dev.ConsoleRenderer(
            colors=sys.stderr.isatty(), exception_formatter=structlog.dev.plain_traceback
        )

    numeric_level = logging.getLevelName(level.upper())
    structlog.configure(
        processors=[structlog.stdlib.filter_by_level, *shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
    )
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(numeric_level)
    # uvicorn installs its own handlers; send its records through ours and silence its access log
    # (the service writes one access line per request itself, with the request_id bound).
    for name in ("uvicorn", "uvicorn.error"):
        uv = logging.getLogger(name)
        uv.handlers.clear()
        uv.propagate = True
    logging.getLogger("uvicorn.access").disabled = True
    for noisy in ("httpx", "httpcore", "openai", "google_genai"):
        logging.getLogger(noisy).setLevel(max(numeric_level, logging.WARNING))


def trace_field(headers: Mapping[str, str], project: str | None) -> dict[str, str]:
    """Cloud Logging's trace correlation key from `traceparent` or `X-Cloud-Trace-Context`."""
    trace_id = ""
    traceparent = headers.get("traceparent", "")
    parts = traceparent.split("-")
    if len(parts) >= 4 and len(parts[1]) == 32 and all(c in "0123456789abcdef" for c in parts[1]):
        trace_id = parts[1]
    else:
        cloud = headers.get("x-cloud-trace-context", "")
        candidate = cloud.split("/", 1)[0].strip()
        if candidate and len(candidate) <= 64 and candidate.isalnum():
            trace_id = candidate
    if not trace_id:
        return {}
    value = f"projects/{project}/traces/{trace_id}" if project else trace_id
    return {"logging.googleapis.com/trace": value}
