"""PgBouncer in transaction pooling mode in front of the tests' PostgreSQL server, as shared servers run
it: each transaction may run on another server session, and unknown startup parameters are refused
(PgBouncer's defaults). The binary comes from Debian's ``pgbouncer`` package (``make test`` installs it
when missing); it refuses to run as root, so under root it runs as the ``postgres`` user."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from port_for import get_port

from servers.postgres_server import SERVER_USER, PostgresServer, wait_for_sessions


def find_pgbouncer() -> str | None:
    return shutil.which("pgbouncer") or next(
        (p for p in ("/usr/sbin/pgbouncer", "/usr/bin/pgbouncer") if Path(p).is_file()), None
    )


class PgBouncer:
    """One PgBouncer for ``server``: ``start()``, ``url(database)``, ``stop()``."""

    def __init__(self, server: PostgresServer, binary: str) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="graphwalk-pgbouncer-"))
        self.port = get_port(None)
        self.binary = binary
        (self.folder / "users.txt").write_text(f'"{SERVER_USER}" ""\n', encoding="utf-8")
        (self.folder / "pgbouncer.ini").write_text(
            f"[databases]\n* = host=127.0.0.1 port={server.port}\n[pgbouncer]\n"
            f"listen_addr = 127.0.0.1\nlisten_port = {self.port}\nunix_socket_dir =\n"
            f"auth_type = trust\nauth_file = {self.folder / 'users.txt'}\npool_mode = transaction\n"
            f"logfile = {self.folder / 'pgbouncer.log'}\npidfile = {self.folder / 'pgbouncer.pid'}\n",
            encoding="utf-8",
        )
        if os.geteuid() == 0:
            shutil.chown(self.folder, SERVER_USER)
            for file in self.folder.iterdir():
                shutil.chown(file, SERVER_USER)

    def _command(self, *args: str) -> list[str]:
        command = [self.binary, *args]
        return ["runuser", "-u", SERVER_USER, "--", *command] if os.geteuid() == 0 else command

    def start(self, timeout: float = 30.0) -> PgBouncer:
        subprocess.run(self._command("-d", str(self.folder / "pgbouncer.ini")), check=True)
        wait_for_sessions(self.url("postgres", driver="postgresql"), timeout)
        return self

    def stop(self) -> None:
        pid = self.folder / "pgbouncer.pid"
        try:
            if pid.is_file():
                os.kill(int(pid.read_text(encoding="utf-8")), 15)
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)

    def url(self, database: str, driver: str = "postgresql+psycopg") -> str:
        return f"{driver}://{SERVER_USER}@127.0.0.1:{self.port}/{database}"
