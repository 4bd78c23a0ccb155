"""The ssh transport: one persistent Fabric connection per device worker.

Why it looks the way it does:

- One connection, reused across points. A fresh SSH handshake per point costs more than
  many of the points measure; the connection is opened on the first call and kept until a
  transport failure drops it (the next call reconnects) or `close()`.
- The agent travels once per content hash, over the exec channel, never SFTP: many real
  hosts have no sftp subsystem (dropbear, hardened sshd), where `put` fails with a bare
  "Channel closed". A small stdlib installer (`python -c INSTALLER check|push SHA`, built
  from bundle.CACHE_CODE) first checks `~/.cache/benchlab/agent-<sha>.pyz`: a private dir
  (0700, ours, no symlink) and a regular file of ours whose sha256 verifies. Only when it
  does not is the zipapp sent on the same command's stdin; the installer checks the hash of
  what arrived, writes a temp file, fsyncs and renames it into place (two workers pushing at
  once never leave half a file) and verifies the result.
- Every wait is bounded. paramiko has waits without a timeout (`exec_command` waits for
  the server's reply forever; a stopped sshd keeps its TCP connection alive), so each phase
  runs under a watchdog that closes the connection when the phase overruns. TCP keepalive
  plus `TCP_USER_TIMEOUT` notice a dead link within about `connect_timeout_s`.
- Only the device failing is a `DeviceError`. Every paramiko, socket and Fabric failure to
  reach or keep the device is one (the scheduler retries those); a benchmark's own non-zero
  exit is not: it comes back inside the agent's envelope.
- Host keys are checked against known_hosts unless the device opts out with
  `insecure_accept_host_key: true`.

Fabric is imported here and only here, so `local` sweeps never pay for it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import select
import shlex
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import paramiko

from benchlab.devices.base import Transport
from benchlab.devices.bundle import CACHE_CODE, agent_zipapp
from benchlab.errors import ConfigError, DeviceError

if TYPE_CHECKING:
    from fabric import Connection  # type: ignore[import-untyped]  # fabric ships no types

    from benchlab.models import DeviceConfig

log = logging.getLogger("benchlab.devices.ssh")

REMOTE_CACHE = ".cache/benchlab"
"""Where the agent lives on the device, relative to the login user's home."""

_INSTALLER_MAIN = r"""
import json, sys
mode, sha = sys.argv[1], sys.argv[2]
if len(sha) != 64 or sha.strip("0123456789abcdef"):
    print(json.dumps({"error": "bad agent hash %r" % sha}))
    sys.exit(3)
d = os.path.join(os.path.expanduser("~"), REMOTE_CACHE)
name = "agent-%s.pyz" % sha
target = os.path.join(d, name)
problem = private_dir_problem(d)
if problem is not None:
    print(json.dumps({"error": "%s: refusing this agent cache dir: %s" % (d, problem)}))
    sys.exit(3)
if mode == "push":
    blob = sys.stdin.buffer.read()
    if hashlib.sha256(blob).hexdigest() != sha:
        print(json.dumps({"error": "agent damaged in transfer (%d bytes arrived)" % len(blob)}))
        sys.exit(3)
    try:
        install_file(d, name, blob)
    except OSError as exc:
        print(json.dumps({"error": "%s: cannot write the agent: %s" % (d, exc.strerror)}))
        sys.exit(3)
print(json.dumps({"path": target, "ok": verified_file(target, sha)}))
""".replace("REMOTE_CACHE", repr(REMOTE_CACHE))

INSTALLER = CACHE_CODE + "\n" + _INSTALLER_MAIN
"""`python -c INSTALLER check|push SHA` on the device (the module docstring says why)."""

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TRANSPORT_ERRORS = (paramiko.SSHException, OSError, EOFError)
_READ_CHUNK = 1 << 16
_POLL_S = 0.5


class _Deadline(TimeoutError):
    """A command ran past its limit (the same outcome as the watchdog firing)."""


class HostKeyMissing(paramiko.SSHException):
    """The server's key is not in known_hosts (raised by the reject policy)."""


class _RejectUnknownHost(paramiko.MissingHostKeyPolicy):
    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: Any) -> None:
        raise HostKeyMissing(hostname)


class _WarnAndAccept(paramiko.MissingHostKeyPolicy):
    """Accept an unknown key for this connection only, loudly (the device opted out)."""

    def __init__(self, device_id: str) -> None:
        self.device_id = device_id

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: Any) -> None:
        log.warning(
            "device %s: accepting unverified %s host key %s for %s "
            "(insecure_accept_host_key: true)",
            self.device_id,
            key.get_name(),
            key.get_fingerprint().hex(),
            hostname,
        )
        client.get_host_keys().add(hostname, key.get_name(), key)


def _describe(exc: BaseException) -> str:
    text = str(exc).strip() or repr(exc)
    return f"{type(exc).__name__}: {text}"


class SshTransport(Transport):
    """Runs agent verbs on one device over a persistent SSH connection.

    Usage::

        with SshTransport("pi5", DeviceConfig(transport="ssh", host="pi5")) as device:
            device.call("clock", timeout=30)

    `_agent` is a test seam: a (path, sha256) pair used instead of `agent_zipapp()`.
    """

    def __init__(
        self,
        device_id: str,
        config: DeviceConfig,
        *,
        _agent: tuple[Path, str] | None = None,
    ) -> None:
        super().__init__(device_id)
        self.config = config
        self.alias = config.host or device_id
        for key in config.env:
            if not _ENV_NAME.match(key):
                raise ConfigError(
                    f"devices.{device_id}.env: {key!r} is not a valid environment variable name"
                )
        try:
            self._python = shlex.split(config.python)
        except ValueError as exc:
            raise ConfigError(f"devices.{device_id}.python: {exc}") from None
        if not self._python:
            raise ConfigError(f"devices.{device_id}.python: empty")
        self._ssh_config_path: Path | None = None
        if config.ssh_config:
            self._ssh_config_path = Path(config.ssh_config).expanduser()
            if not self._ssh_config_path.is_file():
                raise ConfigError(
                    f"devices.{device_id}.ssh_config: {config.ssh_config}: file not found"
                )
        self._agent = _agent
        self._lock = threading.RLock()
        self._conn: Connection | None = None
        self._sock: socket.socket | None = None
        self._remote_agent: str | None = None
        self.connects = 0
        """How many connections were opened (one, unless a failure dropped one)."""
        self.pushes = 0
        """How many times the agent was uploaded (one per hash per device, at most)."""

    # --- public -------------------------------------------------------------------------

    def call(self, verb: str, payload: dict[str, Any] | None = None, *, timeout: float) -> Any:
        """Run `agent <verb>` with `payload` on stdin; return the agent's JSON answer.

        The command may run for `min(timeout, command_timeout_s)`; connecting is bounded by
        `connect_timeout_s`. Any failure to reach or keep the device drops the connection
        and raises DeviceError; the next call reconnects.
        """
        limit = max(0.1, min(timeout, self.config.command_timeout_s))
        stdin = b"" if payload is None else json.dumps(payload).encode("utf-8")
        with self._lock:
            try:
                conn = self._connection()
                agent = self._agent_on_device(conn, limit, verb)
                command = self._command_line(agent, verb)
                status, out, err = self._exec(conn, command, stdin, limit, verb)
            except DeviceError:
                self._drop()
                raise
        return self._answer(verb, status, out, err)

    def close(self) -> None:
        """Close the connection; safe to call twice and from another thread."""
        self._drop()

    @property
    def connected(self) -> bool:
        """Whether a live connection is held (keepalive clears it soon after a link dies)."""
        conn = self._conn
        return conn is not None and conn.is_connected

    @property
    def where(self) -> str:
        """`device (user@host:port)` for messages; private, so never in public files."""
        conn = self._conn
        if conn is None:
            return f"device {self.device_id} ({self.alias})"
        return f"device {self.device_id} ({conn.user}@{conn.host}:{conn.port})"

    # --- connection -----------------------------------------------------------------------

    def _connection(self) -> Connection:
        if self._conn is not None and self._conn.is_connected:
            return self._conn
        self._drop()
        conn = self._new_connection()
        self._conn = conn
        budget = self.config.connect_timeout_s
        # TCP connect, banner and auth each have their own timeout; the watchdog bounds the
        # sum (and the waits paramiko leaves unbounded).
        with self._watchdog(3 * budget + 1, "connecting"):
            self._sock = self._open_socket(conn) if not conn.gateway else None
            if self._sock is not None:
                conn.connect_kwargs["sock"] = self._sock
            conn.open()
            transport = conn.transport
            if transport is None or not transport.is_active():
                raise paramiko.SSHException("connection closed during handshake")
            transport.set_keepalive(max(1, int(budget / 3)))
        self.connects += 1
        return conn

    def _new_connection(self) -> Connection:
        from fabric import Config, Connection

        try:
            fabric_config = (
                Config(runtime_ssh_path=str(self._ssh_config_path))
                if self._ssh_config_path
                else Config()
            )
        except Exception as exc:  # fabric surfaces parse errors as several types
            raise ConfigError(
                f"devices.{self.device_id}.ssh_config: cannot read: {_describe(exc)}"
            ) from None
        budget = self.config.connect_timeout_s
        connect_kwargs: dict[str, Any] = {
            "timeout": budget,
            "banner_timeout": budget,
            "auth_timeout": budget,
            "channel_timeout": budget,
        }
        if self.config.identity_file:
            connect_kwargs["key_filename"] = [str(Path(self.config.identity_file).expanduser())]
        conn = Connection(
            self.alias,
            user=self.config.user,
            port=self.config.port,
            config=fabric_config,
            connect_kwargs=connect_kwargs,
        )
        # Fabric truncates its own connect_timeout to whole seconds; ours lives in
        # connect_kwargs["timeout"] as a float.
        conn.connect_timeout = None
        self._trust_host_keys(conn)
        return conn

    def _trust_host_keys(self, conn: Connection) -> None:
        """RejectPolicy over known_hosts, unless this device opted out (Fabric auto-adds)."""
        client = conn.client
        files = [Path("~/.ssh/known_hosts").expanduser()]
        for key in ("globalknownhostsfile", "userknownhostsfile"):
            value = conn.ssh_config.get(key)
            for name in value if isinstance(value, list) else str(value or "").split():
                files.append(Path(name).expanduser())
        for path in files:
            if path.is_file():
                try:
                    client.load_host_keys(str(path))
                except (OSError, paramiko.SSHException) as exc:
                    raise DeviceError(
                        f"{self.where}: cannot read known_hosts {path}: {_describe(exc)}",
                        device=self.device_id,
                    ) from None
        if self.config.insecure_accept_host_key:
            client.set_missing_host_key_policy(_WarnAndAccept(self.device_id))
        else:
            client.set_missing_host_key_policy(_RejectUnknownHost())

    def _open_socket(self, conn: Connection) -> socket.socket:
        """A TCP socket that notices a dead peer within about connect_timeout_s."""
        budget = self.config.connect_timeout_s
        sock = socket.create_connection((conn.host, conn.port), timeout=budget)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        idle = max(1, int(budget / 3))
        for name, value in (("TCP_KEEPIDLE", idle), ("TCP_KEEPINTVL", 1), ("TCP_KEEPCNT", 3)):
            if hasattr(socket, name):
                sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, name), value)
        if hasattr(socket, "TCP_USER_TIMEOUT"):
            sock.setsockopt(
                socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, max(1000, int(budget * 1000))
            )
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def _drop(self) -> None:
        with contextlib.suppress(Exception):
            if self._sock is not None:
                self._sock.shutdown(socket.SHUT_RDWR)
        conn, self._conn, self._sock = self._conn, None, None
        self._remote_agent = None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    def _abort(self) -> None:
        """Called by a watchdog thread: wake every blocked wait by closing the link."""
        with contextlib.suppress(Exception):
            if self._sock is not None:
                self._sock.shutdown(socket.SHUT_RDWR)
        conn = self._conn
        if conn is not None and conn.transport is not None:
            with contextlib.suppress(Exception):
                conn.transport.close()

    @contextlib.contextmanager
    def _watchdog(self, seconds: float, doing: str) -> Iterator[None]:
        """Bound one phase; map every transport-level exception to DeviceError."""
        fired = threading.Event()

        def fire() -> None:
            fired.set()
            self._abort()

        timer = threading.Timer(seconds, fire)
        timer.daemon = True
        timer.start()
        try:
            yield
        except HostKeyMissing as exc:
            raise DeviceError(
                f"{self.where}: host key for {exc} not in known_hosts; add it or set "
                "insecure_accept_host_key: true",
                device=self.device_id,
            ) from None
        except paramiko.BadHostKeyException as exc:
            raise DeviceError(
                f"{self.where}: host key for {exc.hostname} does not match known_hosts "
                "(the machine was reinstalled, or someone is in the middle); "
                "remove the stale line if you trust the new key",
                device=self.device_id,
            ) from None
        except _TRANSPORT_ERRORS as exc:
            if fired.is_set() or isinstance(exc, _Deadline):
                raise self._timed_out(doing, seconds) from exc
            raise DeviceError(
                f"{self.where}: {doing} failed: {_describe(exc)}", device=self.device_id
            ) from exc
        finally:
            timer.cancel()
        if fired.is_set():
            raise self._timed_out(doing, seconds)

    def _timed_out(self, doing: str, seconds: float) -> DeviceError:
        return DeviceError(
            f"{self.where}: no answer within {seconds:g}s while {doing}; connection dropped",
            device=self.device_id,
        )

    # --- the agent ------------------------------------------------------------------------

    def _agent_bundle(self) -> tuple[Path, str]:
        if self._agent is None:
            self._agent = agent_zipapp()
        return self._agent

    def _agent_on_device(self, conn: Connection, limit: float, verb: str) -> str:
        """The agent's absolute path on the device, uploading it first if it does not verify."""
        if self._remote_agent is not None:
            return self._remote_agent
        local, sha = self._agent_bundle()
        answer = self._install(conn, "check", sha, b"", limit, verb)
        if not answer.get("ok"):
            answer = self._install(conn, "push", sha, local.read_bytes(), limit, verb)
            if not answer.get("ok"):
                raise DeviceError(
                    f"{self.where}: the agent pushed to {answer.get('path')} does not verify "
                    f"(sha256 {sha[:12]}...)",
                    device=self.device_id,
                )
            self.pushes += 1
            log.info("device %s: pushed agent %s", self.device_id, sha[:12])
        self._remote_agent = str(answer["path"])
        return self._remote_agent

    def _install(
        self, conn: Connection, mode: str, sha: str, data: bytes, limit: float, verb: str
    ) -> dict[str, Any]:
        """Run the installer in `mode` over the exec channel; its JSON answer.

        Errors name the verb the caller asked for: installing is part of running it.
        """
        command = "exec " + shlex.join([*self._python, "-c", INSTALLER, mode, sha])
        budget = max(limit, self.config.connect_timeout_s)
        status, out, err = self._exec(conn, command, data, budget, f"agent {mode}")
        text = out.decode("utf-8", errors="replace")
        try:
            answer = json.loads(text) if text.strip() else None
        except (ValueError, RecursionError):  # a hostile device answers 100k `[`
            answer = None
        if status != 0 or not isinstance(answer, dict) or "path" not in answer:
            reason = answer.get("error") if isinstance(answer, dict) else None
            raise DeviceError(
                f"{self.where}: agent `{verb}` exited {status} while "
                f"{'checking' if mode == 'check' else 'pushing'} the agent: "
                f"{reason or _tail(err) or _tail(out) or 'no output'}",
                device=self.device_id,
            )
        return answer

    def _command_line(self, agent: str, verb: str) -> str:
        argv = [*self._python, agent, verb]
        if self.config.env:
            argv = ["env", *(f"{k}={v}" for k, v in sorted(self.config.env.items())), *argv]
        line = "exec " + shlex.join(argv)
        if self.config.workdir:
            line = f"cd {shlex.quote(self.config.workdir)} && {line}"
        return line

    # --- running one command --------------------------------------------------------------

    def _exec(
        self, conn: Connection, command: str, stdin: bytes, limit: float, verb: str
    ) -> tuple[int, bytes, bytes]:
        transport = conn.transport
        if transport is None:
            raise DeviceError(f"{self.where}: not connected", device=self.device_id)
        deadline = time.monotonic() + limit
        with self._watchdog(limit, f"running agent `{verb}`"):
            channel = transport.open_session(timeout=self.config.connect_timeout_s)
            try:
                channel.settimeout(limit)
                channel.exec_command(command)
                if stdin:
                    channel.sendall(stdin)
                channel.shutdown_write()
                out, err = self._drain(channel, deadline)
                status = channel.recv_exit_status()
                if status == -1 and not transport.is_active():
                    # The link died under the command (keepalive or TCP_USER_TIMEOUT noticed).
                    lost = transport.get_exception()
                    raise paramiko.SSHException(
                        "connection lost" + (f" ({_describe(lost)})" if lost else "")
                    )
            finally:
                channel.close()
        return status, out, err

    def _drain(self, channel: paramiko.Channel, deadline: float) -> tuple[bytes, bytes]:
        """Read stdout and stderr together until EOF (both, so neither window fills)."""
        out, err = bytearray(), bytearray()
        reads: tuple[tuple[Callable[[], bool], Callable[[int], bytes], bytearray], ...] = (
            (channel.recv_ready, channel.recv, out),
            (channel.recv_stderr_ready, channel.recv_stderr, err),
        )
        while True:
            progressed = False
            for ready, recv, sink in reads:
                if ready():
                    sink += recv(_READ_CHUNK)
                    progressed = True
            if progressed:
                continue
            if channel.eof_received or channel.closed:
                return bytes(out), bytes(err)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _Deadline("command ran past its deadline")
            select.select([channel], [], [], min(_POLL_S, remaining))

    def _answer(self, verb: str, status: int, out: bytes, err: bytes) -> Any:
        text = out.decode("utf-8", errors="replace")
        try:
            answer = json.loads(text) if text.strip() else None
        except (ValueError, RecursionError):
            answer = None
        if status != 0:
            if status == -1:
                why = "the session ended without an exit status (killed?)"
            else:
                why = f"exited {status}"
            detail = ""
            if isinstance(answer, dict) and answer.get("error"):
                detail = str(answer["error"])
            else:
                detail = _tail(err) or _tail(out)
            raise DeviceError(
                f"{self.where}: agent `{verb}` {why}" + (f": {detail}" if detail else ""),
                device=self.device_id,
            )
        if answer is None:
            raise DeviceError(
                f"{self.where}: agent `{verb}` answered no JSON: {_tail(out) or _tail(err)!s}",
                device=self.device_id,
            )
        return answer


def _tail(data: bytes, limit: int = 300) -> str:
    text = data.decode("utf-8", errors="replace").strip()
    lines = text.splitlines()
    last = lines[-1] if lines else ""
    return last if len(last) <= limit else last[-limit:]
