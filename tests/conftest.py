"""Shared fixtures: environment first (before the app is imported), then clients and live services."""

from __future__ import annotations

import os

from tests.support.live_service import CALLER_ONLY_PREFIXES  # reads no environment when imported

# The suite never talks to a real provider, nor traces: start from the embedded engine unless a test says otherwise.
for _name in list(os.environ):
    if _name.startswith(CALLER_ONLY_PREFIXES):
        del os.environ[_name]
os.environ["LLM_PROVIDER"] = "heuristic"
os.environ.pop("STATE_SIGNING_KEY", None)
os.environ["STATE_SIGNING_KEYS"] = "test-state-key-0123456789abcdef"  # tests/support/state_tokens.TEST_STATE_KEY

from collections.abc import Callable, Iterator, Mapping  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
import structlog  # noqa: E402
from litestar import Litestar  # noqa: E402
from litestar.testing import TestClient  # noqa: E402

from librarian_svc.app import create_app  # noqa: E402
from librarian_svc.settings import load_settings  # noqa: E402
from tests.support.jsquad import JsquadSet, load_jsquad  # noqa: E402
from tests.support.live_service import LiveService, start_service  # noqa: E402
from tests.support.shared_data import JSQUAD_VALID, require_shared  # noqa: E402
from tests.support.state_tokens import TEST_STATE_KEY  # noqa: E402

AppFactory = Callable[..., Litestar]

LIVE_SERVICE_ENV = {"STATE_SIGNING_KEYS": TEST_STATE_KEY}
"""What every live service of the suite runs with unless its test says otherwise: `start_service` passes on none
of the service's settings from this process's environment, so the suite's signing key is handed over here."""

# In-process apps log through structlog's default console renderer, whose rich tracebacks print every frame's
# locals: about 10 s per unhandled error on a loaded machine. Plain tracebacks, as the service itself logs.
structlog.configure(
    processors=[
        *structlog.get_config()["processors"][:-1],
        structlog.dev.ConsoleRenderer(colors=False, exception_formatter=structlog.dev.plain_traceback),
    ]
)


@pytest.fixture(name="make_app")
def fixture_make_app() -> AppFactory:
    """Build an app from an environment mapping (on top of the defaults)."""

    def make(env: Mapping[str, str] | None = None) -> Litestar:
        return create_app(load_settings({**os.environ, **(env or {})}))

    return make


@pytest.fixture(name="app", scope="session")
def fixture_app() -> Litestar:
    """The app with the embedded engine, built once for the session (it holds no per-request state)."""
    return create_app(load_settings())


@pytest.fixture(name="client")
def fixture_client(app: Litestar) -> Iterator[TestClient[Litestar]]:
    """An in-process client against the session app."""
    with TestClient(app=app, raise_server_exceptions=False) as client:
        yield client


@pytest.fixture(name="live_service", scope="session")
def fixture_live_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    """The real server in a subprocess (embedded engine), shared by the session, signing with the suite's key."""
    # Its playbook store is the session's own: a test that stores a playbook never writes into the checkout.
    store = tmp_path_factory.mktemp("live-playbooks")
    service = start_service(
        {**LIVE_SERVICE_ENV, "PLAYBOOK_DATA_DIR": str(store)}, log_dir=tmp_path_factory.mktemp("live")
    )
    yield service
    service.stop()


@pytest.fixture(name="start_live_service")
def fixture_start_live_service(tmp_path: Path) -> Iterator[Callable[..., LiveService]]:
    """Start extra service processes with their own environment; all are stopped after the test."""
    started: list[LiveService] = []

    def start(
        env: Mapping[str, str] | None = None,
        *,
        ready_timeout: float = 30.0,
        extra_args: list[str] | None = None,
        module: str | None = None,
        wait_for: str | None = "/ready",
        port: int | None = None,
    ) -> LiveService:
        service = start_service(
            {**LIVE_SERVICE_ENV, **(env or {})},
            log_dir=tmp_path,
            port=port,
            ready_timeout=ready_timeout,
            extra_args=extra_args,
            module=module,
            wait_for=wait_for,
        )
        started.append(service)
        return service

    yield start
    for service in started:
        service.stop()


@pytest.fixture(name="jsquad_slice", scope="session")
def fixture_jsquad_slice() -> JsquadSet:
    """The 71-paragraph JSQuAD slice committed in tests/fixtures (end-to-end loops, scale-out)."""
    return load_jsquad(Path(__file__).parent / "fixtures" / "jsquad_slice.json")


@pytest.fixture(name="jsquad_full", scope="session")
def fixture_jsquad_full() -> JsquadSet:
    """All 1,145 JSQuAD validation paragraphs from ../shared/data (recall checks); fails if absent."""
    return load_jsquad(require_shared(JSQUAD_VALID))


# `make unit` runs `-m "not live and not postgres and not go and not slow"`. Tests are marked here by what
# they use, so a new test that starts a server is out of the fast run without anyone remembering a marker.
SERVER_FIXTURES = {
    "live_service": "live",
    "start_live_service": "live",
    "debian_postgres": "postgres",
    "pgvector_postgres": "postgres",
}
DIRECTORY_MARKERS = {"clients": "go", "contract": "live", "scale": "live"}
"""Folders under tests/ whose every test needs the Go toolchain or a running service."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark tests that use a server fixture (directly or through another fixture) or live in a server folder."""
    tests_dir = Path(__file__).parent
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        for marker in {marker for fixture, marker in SERVER_FIXTURES.items() if fixture in used}:
            item.add_marker(marker)
        folder = item.path.relative_to(tests_dir).parts[0]
        if folder in DIRECTORY_MARKERS:
            item.add_marker(DIRECTORY_MARKERS[folder])


pytest_plugins = ["tests.fakes.fixtures"]


@pytest.hookimpl(trylast=True)  # after hypothesis' own, which ends its initialisation phase
def pytest_sessionstart(session: pytest.Session) -> None:
    """Import hypothesis' regex strategy now, on a shallow stack, rather than in the first test that needs it.

    hypothesis imports it the first time a test draws from `st.from_regex`, deep in that test's stack. pytest
    rewrites hypothesis' modules as it imports them (hypothesis is a pytest plugin), and CPython 3.11's parser
    may then fail with "SystemError: AST constructor recursion depth mismatch" (pytest-dev/pytest#10874):
    about one run in two of `tests/graphs/llm` failed so in `test_validation.py`.
    """
    import hypothesis.strategies._internal.regex  # noqa: F401
