"""A private Slurm cluster on loopback: munged, slurmctld and two slurmd nodes, in a temp dir.

Why a real cluster: the exec transport's promise is that `srun -w NODE --` is just another
prefix. Only a real srun shows what a drained node looks like to that prefix (srun queues,
then gives up with "Unable to allocate resources", exit 1, no JSON), and only a real
`scontrol update ... state=resume` shows that a resumed sweep measures exactly the holes.

The cluster is two nodes, `n1` (127.0.0.1) and `n2` (127.0.0.2), both served by this host:
Debian's slurmd honours `-N NODE`, each node with its own port, spool dir, pid file and log.
Plugins that need cgroups or a database are off (proctrack/linuxproc, task/none,
jobacct_gather/none, accounting_storage/none), so it runs in an unprivileged container as
root. Nothing listens or talks beyond loopback addresses: every address in the config is
127.0.0.x and the ports are picked free on 127.0.0.1. Every daemon is a child of the fixture
and is stopped by its pid (TERM, a bounded wait, then KILL), even when the start fails.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

BINARIES = ("munged", "slurmctld", "slurmd", "srun", "scontrol", "sinfo")
NODES = {"n1": "127.0.0.1", "n2": "127.0.0.2"}
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0


def _which(name: str) -> str | None:
    """The program's path; daemons live in /usr/sbin, which a plain user's PATH may lack."""
    sbin = f"/usr/sbin/{name}"
    return shutil.which(name) or (sbin if os.access(sbin, os.X_OK) else None)


def missing_binaries() -> list[str]:
    """The Slurm/munge programs this machine lacks (tools/ci-setup.sh installs them)."""
    return [name for name in BINARIES if _which(name) is None]


def _free_ports(count: int) -> list[int]:
    """Ports free on 127.0.0.1 right now (held open together, so they are distinct)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


@dataclass
class SlurmCluster:
    """A running cluster: its config path and a way to run its client tools."""

    root: Path
    conf: Path
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def env(self) -> dict[str, str]:
        """The environment every Slurm client needs to find this cluster and no other."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def tool(self, *argv: str, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
        """Run a Slurm client tool against this cluster, bounded."""
        return subprocess.run(
            [_which(argv[0]) or argv[0], *argv[1:]],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def node_state(self, node: str) -> str:
        done = self.tool("sinfo", "-h", "-n", node, "-o", "%T")
        return done.stdout.strip()

    def set_state(self, node: str, state: str) -> None:
        """`scontrol update nodename=NODE state=STATE` (drain and down need a reason)."""
        argv = ["scontrol", "update", f"nodename={node}", f"state={state}"]
        if state in ("drain", "down"):
            argv.append("reason=benchlab-test")
        done = self.tool(*argv)
        assert done.returncode == 0, done.stderr

    def wait_usable(self, node: str, timeout: float = START_TIMEOUT_S) -> None:
        """Resume NODE if it is drained or down, then wait until it takes jobs again.

        `idle*` (not responding yet after a resume) already takes jobs: slurmctld sends the
        next job and the node answers, so only drain/down and busy states are waited out.
        """
        state = self.node_state(node)
        if any(word in state for word in ("drain", "down")):
            self.set_state(node, "resume")
        deadline = time.monotonic() + timeout
        while self.node_state(node).rstrip("*") != "idle":
            assert time.monotonic() < deadline, f"{node}: {self.node_state(node)}\n{self.logs()}"
            time.sleep(0.2)

    def logs(self) -> str:
        """The tail of every daemon log, for a failure message."""
        parts = []
        for path in sorted((self.root / "log").glob("*")):
            lines = path.read_text(errors="replace").splitlines()[-15:]
            parts.append(f"== {path.name}\n" + "\n".join(lines))
        return "\n".join(parts)

    def stop(self) -> None:
        """Stop every daemon by its pid: TERM, a bounded wait, then KILL."""
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for process in self.processes.values():
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=STOP_TIMEOUT_S)


def _config(root: Path, ctld_port: int, node_ports: dict[str, int]) -> str:
    nodes = "\n".join(
        f"NodeName={name} NodeHostname=localhost NodeAddr={addr} Port={node_ports[name]} "
        "CPUs=2 RealMemory=500 State=UNKNOWN"
        for name, addr in NODES.items()
    )
    return f"""\
ClusterName=benchlabtest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={node_ports["n1"]}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={root}/munge/socket
SlurmUser=root
SlurmdUser=root
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool/%n
SlurmctldPidFile={root}/run/slurmctld.pid
SlurmdPidFile={root}/run/slurmd-%n.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
MailProg=/bin/true
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=5
KillWait=2
{nodes}
PartitionName=bench Nodes={",".join(NODES)} Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
"""


def _wait(what: str, ready: object, cluster: SlurmCluster) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while not ready():  # type: ignore[operator]
        for name, process in cluster.processes.items():
            if process.poll() is not None:
                raise RuntimeError(f"{name} exited {process.returncode}\n{cluster.logs()}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} not ready in {START_TIMEOUT_S:.0f} s\n{cluster.logs()}")
        time.sleep(0.2)


def start_cluster(root: Path) -> SlurmCluster:
    """Write the config and a fresh munge key, start the daemons, wait until both nodes idle.

    The caller must call `stop()` whatever happens; on a failed start this stops what it
    started before raising.
    """
    for sub in ("munge", "state", "spool/n1", "spool/n2", "run", "log"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    (root / "munge").chmod(0o700)
    key = root / "munge" / "munge.key"
    key.write_bytes(secrets.token_bytes(1024))
    key.chmod(0o600)
    ctld_port, port1, port2 = _free_ports(3)
    conf = root / "slurm.conf"
    conf.write_text(_config(root, ctld_port, {"n1": port1, "n2": port2}))
    cluster = SlurmCluster(root=root, conf=conf)

    def spawn(name: str, argv: list[str]) -> None:
        log = (root / "log" / f"{name}.out").open("wb")
        with log:
            cluster.processes[name] = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, env=cluster.env, cwd=root
            )

    try:
        munge = root / "munge"
        spawn(
            "munged",
            [
                str(_which("munged")),
                "--foreground",
                "--force",
                f"--socket={munge}/socket",
                f"--key-file={key}",
                f"--log-file={munge}/munged.log",
                f"--pid-file={munge}/munged.pid",
                f"--seed-file={munge}/munged.seed",
            ],
        )
        _wait("munged", (munge / "socket").exists, cluster)
        spawn("slurmctld", [str(_which("slurmctld")), "-D", "-f", str(conf)])
        _wait("slurmctld", lambda: cluster.tool("scontrol", "ping").returncode == 0, cluster)
        for node in NODES:
            spawn(f"slurmd-{node}", [str(_which("slurmd")), "-D", "-N", node, "-f", str(conf)])
        _wait(
            "both slurmd nodes",
            lambda: all(cluster.node_state(node) == "idle" for node in NODES),
            cluster,
        )
    except BaseException:
        cluster.stop()
        raise
    return cluster


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """A two-node Slurm cluster for the module; skipped only when Slurm is not installed."""
    missing = missing_binaries()
    if missing:
        pytest.skip(
            f"Slurm not installed ({', '.join(missing)} missing): "
            "apt-get install slurm-wlm munge (tools/ci-setup.sh does)"
        )
    cluster = start_cluster(tmp_path_factory.mktemp("slurm"))
    try:
        yield cluster
    finally:
        cluster.tool("scancel", "--partition=bench", timeout=15)
        cluster.stop()
