"""A throwaway PostgreSQL server for tests and benchmarks: ``initdb`` + ``pg_ctl`` in a temp dir,
listening on 127.0.0.1 at a free port, removed when stopped.

Debian's ``postgresql`` package (installed by ``make test``, see scripts/setup-system.sh) puts the
server programs in /usr/lib/postgresql/<version>/bin, off PATH. PostgreSQL refuses to run as root,
so under root the cluster belongs to the ``postgres`` user the package creates.
"""

from __future__ import annotations

import atexit
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.timeouts import timeout

USER = "nini"


def server_bin() -> Path | None:
    """The folder of ``initdb`` and ``pg_ctl`` (PATH first, then Debian's newest), or None."""
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(candidates[-1]).parent if candidates else None


def unavailable() -> str | None:
    """Why a cluster cannot start here (one line), or None."""
    if server_bin() is None:
        return "PostgreSQL is not installed (make test installs Debian's postgresql where apt and root allow)"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install -e '.[dev]')"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root without a postgres user to own the cluster"
    return None


@dataclass
class Cluster:
    root: Path
    port: int
    bin: Path

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://{USER}@127.0.0.1:{self.port}/{database}"

    def conninfo(self, database: str = "postgres") -> str:
        return f"host=127.0.0.1 port={self.port} user={USER} dbname={database}"

    def create_database(self, name: str | None = None) -> str:
        """A new empty database; its SQLAlchemy URL."""
        import psycopg

        name = name or "t" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.conninfo(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        _run([str(self.bin / "pg_ctl"), "-D", str(self.root / "data"), "-m", "immediate", "stop"], check=False)
        shutil.rmtree(self.root, ignore_errors=True)

    def halt(self) -> None:
        """Stop the server as a crash would (``-m immediate``), keeping its data for ``resume``."""
        _run([str(self.bin / "pg_ctl"), "-D", str(self.root / "data"), "-m", "immediate", "-w", "stop"])

    def resume(self) -> None:
        """Start the halted server again, on the same port and data (crash recovery first)."""
        _run(
            [
                str(self.bin / "pg_ctl"),
                "-D",
                str(self.root / "data"),
                "-o",
                _options(self.root, self.port),
                "-l",
                str(self.root / "log"),
                "-w",
                "-t",
                "60",
                "start",
            ]
        )


def _options(root: Path, port: int) -> str:
    return (
        f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=on -c max_connections=200 -c shared_buffers=64MB"
    )


def start(parent: Path | None = None) -> Cluster:
    """A running cluster with trust authentication for user ``nini`` on 127.0.0.1 only; its files in
    a new folder of ``parent`` (a small filesystem, say) or of the temp dir."""
    reason = unavailable()
    if reason:
        raise RuntimeError(reason)
    bin_dir = server_bin()
    assert bin_dir is not None
    root = Path(tempfile.mkdtemp(prefix="nini-pg-", dir=parent))
    if os.geteuid() == 0:
        postgres = pwd.getpwnam("postgres")
        os.chown(root, postgres.pw_uid, postgres.pw_gid)
    data, port = root / "data", _free_port()
    try:
        _run(["cp", "-a", str(_template(bin_dir)), str(data)])
        _run(
            [
                str(bin_dir / "pg_ctl"),
                "-D",
                str(data),
                "-o",
                _options(root, port),
                "-l",
                str(root / "log"),
                "-w",
                "-t",
                "60",
                "start",
            ]
        )
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return Cluster(root, port, bin_dir)


_templates: dict[Path, Path] = {}


def _template(bin_dir: Path) -> Path:
    """A data folder ``initdb`` made once per process, which each ``start`` copies: initdb costs
    seconds of CPU (it boots a server several times over), a copy of its ~40 MB a fraction of one,
    and a test that halts or fills its own cluster changes only its copy. Removed at exit."""
    if bin_dir not in _templates:
        folder = Path(tempfile.mkdtemp(prefix="nini-pg-template-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        if os.geteuid() == 0:
            postgres = pwd.getpwnam("postgres")
            os.chown(folder, postgres.pw_uid, postgres.pw_gid)
        data = folder / "data"
        _run([str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", USER, "-E", "UTF8", "--no-sync"])
        _templates[bin_dir] = data
    return _templates[bin_dir]


@contextmanager
def running() -> Iterator[Cluster]:
    """A started cluster (``start``), stopped and removed when the block ends."""
    cluster = start()
    try:
        yield cluster
    finally:
        cluster.stop()


def _run(command: list[str], check: bool = True) -> None:
    if os.geteuid() == 0:  # PostgreSQL will not run as root
        command = ["runuser", "-u", "postgres", "--", *command]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout(120), cwd="/")
    if check and done.returncode != 0:
        raise RuntimeError(f"{Path(command[-1]).name} failed: {done.stderr.strip() or done.stdout.strip()}")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
