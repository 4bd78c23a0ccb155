"""A test fleet: several real sshd hosts on this machine, with faults on demand.

Each host is a network namespace joined to the root namespace by its own veth pair and
running its own sshd (own config, host key, pid file). The controller (the test process)
stays in the root namespace and reaches host i at 10.213.7.(10+i) through veth `blfleet<i>`.

Network safety (STACK-NOTES.md): a veth address whose link is down falls back to the
default route and would leave the machine. So before any host exists the fleet installs
`unreachable 10.213.7.0/24 metric 4000` and asserts with `ip route get` that every test
address routes through a fleet veth or nowhere, never through a gateway; it asserts it
again after every cut and restore. The host namespaces have no default route at all.
Teardown removes every namespace, veth and route by name, even after a failure, and a new
fleet first removes the leftovers of a killed earlier run (a lock file keeps two runs on
one machine from tearing down each other's hosts).

Where namespaces cannot be created (no CAP_NET_ADMIN), the fleet falls back to several
sshd on loopback ports; only link cuts are unavailable there (`Fleet.can_cut`).
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SUBNET = "10.213.7.0/24"
CONTROLLER_IP = "10.213.7.1"
SPARE_IP = "10.213.7.250"
"""An address of the test subnet that no host owns: it must always be unreachable."""
GUARD_ROUTE = ["unreachable", SUBNET, "metric", "4000"]
NS_PREFIX = "benchlab-fleet-"
VETH_PREFIX = "blfleet"
USER = "benchfleet"
LOCK_PATH = Path(tempfile.gettempdir()) / "benchlab-fleet.lock"
DIR_PREFIX = "benchlab-sshfleet-"
DIR_MARKER = ".benchlab-ssh-fleet"
"""Only a dir with this prefix AND this marker file is ever treated as a leftover."""
SSHD = "/usr/sbin/sshd"
WAIT_S = 10.0


class FleetUnavailable(Exception):
    """The fleet cannot be built here; the message says why (tests skip with it)."""


def _run(*argv: str, check: bool = True, timeout: float = 15) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), capture_output=True, text=True, check=check, timeout=timeout)


def _quiet(*argv: str) -> None:
    with contextlib.suppress(subprocess.SubprocessError, OSError):
        _run(*argv, check=False)


@dataclass
class FleetHost:
    """One sshd host of the fleet; `name` is its device id and ssh_config alias."""

    name: str
    index: int
    address: str
    port: int
    dir: Path
    netns: str | None = None
    veth: str | None = None
    process: subprocess.Popen | None = None
    stopped: bool = False
    cut: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid


class Fleet:
    """Builds the hosts, hands out device configs, injects faults, and cleans up."""

    def __init__(self, count: int, *, base: Path | None = None, force_loopback: bool = False):
        self.count = count
        self.dir = Path(tempfile.mkdtemp(prefix=DIR_PREFIX, dir=base))
        self.dir.chmod(0o755)  # sshd reads authorized_keys as the test user
        (self.dir / DIR_MARKER).write_text("a benchlab ssh test fleet; removed by the next one\n")
        self.hosts: list[FleetHost] = []
        self.mode = "loopback" if force_loopback else "netns"
        self.skip_reason: str | None = "" if not force_loopback else "loopback fleet forced"
        self._lock: Any = None
        self._guard_installed = False
        self._processes: list[FleetHost] = []
        self._netns_made: list[str] = []
        self._veths_made: list[str] = []

    # --- life cycle ---------------------------------------------------------------------

    def start(self) -> Fleet:
        self._take_lock()
        self._remove_stale_dirs()
        self._ensure_user()
        self._keys()
        if self.mode == "netns":
            problem = self._netns_problem()
            if problem:
                self.mode = "loopback"
                self.skip_reason = problem
            else:
                self.skip_reason = None
        if self.mode == "netns":
            self._remove_leftovers()
            self._install_guard()
            self.assert_contained()
        for index in range(self.count):
            self.hosts.append(self._make_host(index))
        self._write_client_files()
        if self.mode == "netns":
            self.assert_contained()
        return self

    def close(self) -> None:
        """Remove every process, namespace, veth and route this fleet made, by name."""
        try:
            for host in self._processes:
                self._stop_process(host)
            for netns in self._netns_made:
                self._kill_netns_pids(netns)
                _quiet("ip", "netns", "del", netns)
            for veth in self._veths_made:
                _quiet("ip", "link", "del", veth)
            if self._guard_installed:
                _quiet("ip", "route", "del", *GUARD_ROUTE)
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)
            if self._lock is not None:
                with contextlib.suppress(OSError):
                    fcntl.flock(self._lock, fcntl.LOCK_UN)
                self._lock.close()
                self._lock = None

    @property
    def can_cut(self) -> bool:
        return self.mode == "netns"

    # --- what tests use -----------------------------------------------------------------

    def host(self, name: str) -> FleetHost:
        for host in self.hosts:
            if host.name == name:
                return host
        raise KeyError(name)

    def device(self, name: str, **overrides: Any) -> dict[str, Any]:
        """A DeviceConfig (as a dict) reaching host `name` through the fleet's ssh_config."""
        config: dict[str, Any] = {
            "transport": "ssh",
            "host": name,
            "ssh_config": str(self.ssh_config),
            "python": "/usr/bin/python3",
            "connect_timeout_s": 3.0,
            "command_timeout_s": 60.0,
        }
        config.update(overrides)
        return config

    def add_host(self, *, sftp: bool = True) -> FleetHost:
        """One more host after start(); `sftp=False` is an sshd with no sftp subsystem.

        Hosts without SFTP are real (dropbear, hardened sshd): the transport must not need it.
        The host lives until close(), like the others.
        """
        host = self._make_host(len(self.hosts), sftp=sftp)
        self.hosts.append(host)
        self._write_client_files()
        self.assert_contained()
        return host

    def cut(self, name: str) -> None:
        """Take host `name`'s link down: packets to it are dropped on this machine."""
        host = self.host(name)
        if not self.can_cut:
            raise FleetUnavailable(f"cannot cut links: {self.skip_reason}")
        self.assert_contained()
        _run("ip", "link", "set", str(host.veth), "down")
        host.cut = True
        self.assert_contained()

    def restore(self, name: str) -> None:
        host = self.host(name)
        if not self.can_cut:
            raise FleetUnavailable(f"cannot restore links: {self.skip_reason}")
        _run("ip", "link", "set", str(host.veth), "up")
        _run(
            "ip", "route", "replace", f"{host.address}/32",
            "dev", str(host.veth), "src", CONTROLLER_IP,
        )  # fmt: skip
        host.cut = False
        self.assert_contained()
        self._wait_listening(host)

    def stop_sshd(self, name: str) -> None:
        """SIGSTOP the host's sshd and every session under it: the host goes silent."""
        host = self.host(name)
        for pid in [host.pid, *self._descendants(host.pid)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
        host.stopped = True

    def start_sshd(self, name: str) -> None:
        host = self.host(name)
        for pid in [host.pid, *self._descendants(host.pid)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        host.stopped = False

    def heal(self) -> None:
        """Bring every host back (links up, sshd running); tests call it in `finally`."""
        for host in self.hosts:
            if host.stopped:
                self.start_sshd(host.name)
            if host.cut:
                self.restore(host.name)

    def assert_contained(self) -> None:
        """Every test address routes through a fleet veth or nowhere; never via a gateway."""
        if self.mode != "netns":
            return
        routes = _run("ip", "route", "show", "table", "main").stdout
        assert f"unreachable {SUBNET}" in routes, f"guard route missing:\n{routes}"
        addresses = [host.address for host in self.hosts] + [SPARE_IP]
        for address in addresses:
            probe = _run("ip", "route", "get", address, check=False)
            text = (probe.stdout + probe.stderr).strip()
            host = next((h for h in self.hosts if h.address == address), None)
            if probe.returncode != 0:
                assert "unreachable" in text.lower() or "no route" in text.lower(), text
                assert host is None or host.cut, f"{address} unroutable while up: {text}"
                continue
            assert " via " not in f" {text} ", f"{address} would leave this machine: {text}"
            if host is not None and not host.cut:
                assert f"dev {host.veth} " in f"{text} ", f"{address}: {text}"
            else:
                assert text.startswith("unreachable"), f"{address}: {text}"

    # --- building -------------------------------------------------------------------------

    def _take_lock(self) -> None:
        self._lock = LOCK_PATH.open("a+")
        deadline = time.monotonic() + 240
        while True:
            try:
                fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise FleetUnavailable("another test fleet held the lock for 240 s") from None
                time.sleep(0.5)

    def _ensure_user(self) -> None:
        if os.geteuid() != 0:
            raise FleetUnavailable("the fleet needs root (a test user and sshd on this machine)")
        if not Path(SSHD).is_file():
            raise FleetUnavailable(f"{SSHD} not installed (tools/ci-setup.sh installs it)")
        try:
            pwd.getpwnam(USER)
        except KeyError:
            _run("useradd", "--create-home", "--shell", "/bin/sh", USER)
        _run("usermod", "-p", "*", USER)  # unlocked for key auth, no password
        entry = pwd.getpwnam(USER)
        self.user_home = Path(entry.pw_dir)
        # A fresh agent cache, so "pushed once per hash" is observed from the start.
        shutil.rmtree(self.user_home / ".cache" / "benchlab", ignore_errors=True)
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)

    def _keys(self) -> None:
        self.client_key = self.dir / "id_ed25519"
        _run(
            "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "fleet", "-f", str(self.client_key)
        )
        self.authorized_keys = self.dir / "authorized_keys"
        shutil.copyfile(f"{self.client_key}.pub", self.authorized_keys)
        self.authorized_keys.chmod(0o644)

    def _netns_problem(self) -> str | None:
        if shutil.which("ip") is None:
            return "iproute2 is not installed"
        probe = f"{NS_PREFIX}probe"
        _quiet("ip", "netns", "del", probe)
        made = _run("ip", "netns", "add", probe, check=False)
        _quiet("ip", "netns", "del", probe)
        if made.returncode != 0:
            return f"cannot create network namespaces: {made.stderr.strip()}"
        routes = _run("ip", "route", "show", "table", "all").stdout.splitlines()
        for line in routes:
            if "10.213.7." in line and "metric 4000" not in line and VETH_PREFIX not in line:
                return f"the test subnet {SUBNET} is in use here: {line}"
        return None

    def _remove_stale_dirs(self) -> None:
        """A killed earlier run's sshd processes (found by their config path) and its dir.

        Safe under the lock: no live fleet can own them.
        """
        for stale in Path(tempfile.gettempdir()).glob(f"{DIR_PREFIX}*"):
            if stale == self.dir or not (stale / DIR_MARKER).is_file():
                continue
            marker = f"{stale}/".encode()
            for cmdline in glob.glob("/proc/[0-9]*/cmdline"):
                with contextlib.suppress(OSError, ValueError):
                    text = Path(cmdline).read_bytes()
                    if marker in text and b"sshd" in text:
                        os.kill(int(cmdline.split("/")[2]), signal.SIGKILL)
            shutil.rmtree(stale, ignore_errors=True)

    def _remove_leftovers(self) -> None:
        for line in _run("ip", "netns", "list").stdout.splitlines():
            name = line.split()[0] if line.strip() else ""
            if name.startswith(NS_PREFIX):
                self._kill_netns_pids(name)
                _quiet("ip", "netns", "del", name)
        for line in _run("ip", "-o", "link", "show").stdout.splitlines():
            parts = line.split(":")
            if len(parts) > 1:
                name = parts[1].strip().split("@")[0]
                if name.startswith(VETH_PREFIX):
                    _quiet("ip", "link", "del", name)
        while _run("ip", "route", "del", *GUARD_ROUTE, check=False).returncode == 0:
            pass

    def _install_guard(self) -> None:
        _run("ip", "route", "add", *GUARD_ROUTE)
        self._guard_installed = True

    def _make_host(self, index: int, *, sftp: bool = True) -> FleetHost:
        name = f"h{index}"
        hdir = self.dir / name
        hdir.mkdir()
        hdir.chmod(0o755)
        if self.mode == "netns":
            host = FleetHost(
                name=name,
                index=index,
                address=f"10.213.7.{10 + index}",
                port=22,
                dir=hdir,
                netns=f"{NS_PREFIX}{index}",
                veth=f"{VETH_PREFIX}{index}",
            )
            self._plumb(host)
        else:
            host = FleetHost(
                name=name, index=index, address="127.0.0.1", port=_free_port(), dir=hdir
            )
        host.extra["sftp"] = sftp
        self._start_sshd(host)
        return host

    def _plumb(self, host: FleetHost) -> None:
        ns, veth, peer = str(host.netns), str(host.veth), f"{host.veth}p"
        # Recorded before each is made, so close() removes it even if plumbing fails half-way.
        self._netns_made.append(ns)
        _run("ip", "netns", "add", ns)
        self._veths_made.append(veth)
        _run("ip", "link", "add", veth, "type", "veth", "peer", "name", peer)
        _run("ip", "link", "set", peer, "netns", ns)
        _run("ip", "addr", "add", f"{CONTROLLER_IP}/32", "dev", veth)
        _run("ip", "link", "set", veth, "up")
        _run("ip", "route", "replace", f"{host.address}/32", "dev", veth, "src", CONTROLLER_IP)
        _run("ip", "-n", ns, "link", "set", "lo", "up")
        _run("ip", "-n", ns, "addr", "add", f"{host.address}/32", "dev", peer)
        _run("ip", "-n", ns, "link", "set", peer, "up")
        _run("ip", "-n", ns, "route", "add", f"{CONTROLLER_IP}/32", "dev", peer)

    def _start_sshd(self, host: FleetHost) -> None:
        key = host.dir / "ssh_host_ed25519_key"
        _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", host.name, "-f", str(key))
        config = host.dir / "sshd_config"
        config.write_text(
            "\n".join(
                [
                    f"ListenAddress {host.address}:{host.port}",
                    f"HostKey {key}",
                    f"PidFile {host.dir / 'sshd.pid'}",
                    f"AuthorizedKeysFile {self.authorized_keys}",
                    f"AllowUsers {USER}",
                    "UsePAM no",
                    "StrictModes no",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "PubkeyAuthentication yes",
                    "PermitRootLogin no",
                    "UseDNS no",
                    "PrintMotd no",
                    "PrintLastLog no",
                    "MaxStartups 64",
                    "MaxSessions 64",
                    "LogLevel ERROR",
                    *(["Subsystem sftp internal-sftp"] if host.extra.get("sftp", True) else []),
                    "",
                ]
            )
        )
        argv = [SSHD, "-D", "-e", "-f", str(config)]
        if host.netns:
            argv = ["ip", "netns", "exec", host.netns, *argv]
        log = (host.dir / "sshd.log").open("ab")
        try:
            host.process = subprocess.Popen(argv, stdout=log, stderr=log, start_new_session=True)
            self._processes.append(host)
        finally:
            log.close()
        host.extra["host_key_pub"] = (key.with_suffix(".pub")).read_text().split()[:2]
        self._wait_listening(host)

    def _wait_listening(self, host: FleetHost) -> None:
        deadline = time.monotonic() + WAIT_S
        last: Exception | None = None
        while time.monotonic() < deadline:
            if host.process is not None and host.process.poll() is not None:
                log = (host.dir / "sshd.log").read_text(errors="replace")
                raise FleetUnavailable(f"sshd for {host.name} exited: {log.strip()}")
            try:
                with socket.create_connection((host.address, host.port), timeout=1) as sock:
                    sock.settimeout(1)
                    if sock.recv(4).startswith(b"SSH-"):
                        return
            except OSError as exc:
                last = exc
            time.sleep(0.05)
        raise FleetUnavailable(f"sshd for {host.name} did not listen within {WAIT_S}s: {last}")

    def _write_client_files(self) -> None:
        self.known_hosts = self.dir / "known_hosts"
        lines, blocks = [], []
        for host in self.hosts:
            kind, blob = host.extra["host_key_pub"]
            target = host.address if host.port == 22 else f"[{host.address}]:{host.port}"
            lines.append(f"{target} {kind} {blob}")
            blocks.append(
                f"Host {host.name}\n"
                f"  HostName {host.address}\n"
                f"  Port {host.port}\n"
                f"  User {USER}\n"
                f"  IdentityFile {self.client_key}\n"
                f"  IdentitiesOnly yes\n"
                f"  UserKnownHostsFile {self.known_hosts}\n"
            )
        self.known_hosts.write_text("\n".join(lines) + "\n")
        self.ssh_config = self.dir / "ssh_config"
        self.ssh_config.write_text("\n".join(blocks))

    def known_hosts_line(self, name: str) -> str:
        host = self.host(name)
        kind, blob = host.extra["host_key_pub"]
        target = host.address if host.port == 22 else f"[{host.address}]:{host.port}"
        return f"{target} {kind} {blob}"

    # --- processes ------------------------------------------------------------------------

    @staticmethod
    def _descendants(pid: int) -> list[int]:
        children: dict[int, list[int]] = {}
        for stat in glob.glob("/proc/[0-9]*/stat"):
            with contextlib.suppress(OSError, ValueError, IndexError):
                text = Path(stat).read_text()
                fields = text[text.rindex(")") + 2 :].split()
                children.setdefault(int(fields[1]), []).append(int(stat.split("/")[2]))
        found, queue = [], [pid]
        while queue:
            for child in children.get(queue.pop(), []):
                found.append(child)
                queue.append(child)
        return found

    def _stop_process(self, host: FleetHost) -> None:
        process = host.process
        if process is None:
            return
        pids = [process.pid, *self._descendants(process.pid)]
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=5)

    @staticmethod
    def _kill_netns_pids(netns: str) -> None:
        listed = _run("ip", "netns", "pids", netns, check=False).stdout.split()
        for pid in listed:
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), signal.SIGKILL)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
