"""ExecTransport: a device reached through a command prefix, the agent fed on stdin.

    devices:
      k8s-cpu4: {transport: exec, command: [kubectl, exec, -i, bench-0, --]}
      node7:    {transport: exec, command: [srun, -w, node7, --pty]}
      box:      {transport: exec, command: [docker, exec, -i, bench-box]}

Each call runs `PREFIX... python3 -c BOOTSTRAP VERB`. Nothing is installed on the device by
hand: the bootstrap (stdlib only) reads one header line from stdin, then (when asked) the
agent zipapp as one base64 line, caches the zipapp under ~/.cache/benchlab (or the temp dir)
by its sha256 (in a private dir, verified before every run: bundle.py), and execs
`python agent-<sha>.pyz VERB` with the rest of stdin as the verb's payload. The zipapp
travels once per transport; later calls send only the header, and a device that lost its
cache (a new pod) or holds a file that does not verify says so and gets it again.

A failure of the prefix tool itself is transport (DeviceError): it cannot be started, it exits
126/127/255, it reports a connection it could not make, or no JSON answer comes back. A failure
of the benchmark is not: it comes back inside the agent's envelope.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from benchlab.devices.base import Transport
from benchlab.devices.bundle import CACHE_CODE, agent_zipapp
from benchlab.devices.process import run_agent_process, tail
from benchlab.errors import ConfigError, DeviceError
from benchlab.models import DeviceConfig

_BOOTSTRAP_MAIN = r"""
import base64, json, sys
r = sys.stdin.buffer
h = json.loads(r.readline())
sha = str(h["sha"])
if len(sha) != 64 or sha.strip("0123456789abcdef"):
    print(json.dumps({"error": "bad agent hash in the bootstrap header"}))
    sys.exit(3)
name = "agent-%s.pyz" % sha
dirs = [os.path.join(os.environ.get("XDG_CACHE_HOME") or
                     os.path.join(os.path.expanduser("~"), ".cache"), "benchlab"),
        os.path.join(tempfile.gettempdir(), "benchlab-%s" % os.getuid())]
usable, refused = [], []
for d in dirs:
    problem = private_dir_problem(d)
    if problem is None:
        usable.append(d)
    else:
        refused.append("%s: %s" % (d, problem))
found = [os.path.join(d, name) for d in usable if verified_file(os.path.join(d, name), sha)]
if h["app"]:
    blob = base64.b64decode(r.readline())
    if hashlib.sha256(blob).hexdigest() != sha:
        print(json.dumps({"error": "agent bundle damaged in transfer"}))
        sys.exit(3)
    if not found:
        for d in usable:
            try:
                target = install_file(d, name, blob)
            except OSError as exc:
                refused.append("%s: cannot write: %s" % (d, exc.strerror))
                continue
            if verified_file(target, sha):
                found = [target]
                break
    if not found:
        print(json.dumps({"error": "no private cache dir for the agent on the device ("
                          + "; ".join(refused) + ")"}))
        sys.exit(3)
elif not found:
    print(json.dumps({"benchlab_bootstrap": "missing"}))
    sys.exit(0)
rest = tempfile.TemporaryFile()
rest.write(r.read())
rest.seek(0)
os.dup2(rest.fileno(), 0)
os.environ.update(h.get("env") or {})
if h.get("cwd"):
    cwd = os.path.expanduser(h["cwd"])
    os.makedirs(cwd, exist_ok=True)
    os.chdir(cwd)
sys.stdout.flush()
os.execv(sys.executable, [sys.executable, found[0], h["verb"]])
""".strip()

BOOTSTRAP = CACHE_CODE + "\n" + _BOOTSTRAP_MAIN
"""What `python3 -c` runs on the device: the shared cache checks, then the bootstrap proper.

A cached agent is executed only from a private dir (0700, ours, not a symlink) and only
after its sha256 verifies; a planted or damaged file reads as missing, so the controller
sends the zipapp again and it replaces the bad one (bundle.py says why).
"""

PREFIX_FAILURE_CODES = (126, 127, 255)
"""Exit codes that mean the prefix tool (ssh, kubectl, a shell) could not run the command."""
PREFIX_FAILURE_TEXT = (
    "connection refused",
    "unable to upgrade connection",
    "error from server",
    "no such container",
    "is not running",
    "connection reset",
    "could not resolve",
    "timed out",
)


class ExecTransport(Transport):
    """Runs agent verbs through `config.command`; prefix-tool failures -> DeviceError."""

    def __init__(self, device_id: str, config: DeviceConfig) -> None:
        super().__init__(device_id)
        if not config.command:
            raise ConfigError(
                f"devices.{device_id}.command: required for transport exec (the prefix)"
            )
        self.config = config
        self.prefix = list(config.command)
        self._bundle: tuple[bytes, str] | None = None
        self._pushed = False

    def _app(self) -> tuple[bytes, str]:
        if self._bundle is None:
            path, sha = agent_zipapp()
            self._bundle = (base64.b64encode(path.read_bytes()), sha)
        return self._bundle

    def call(self, verb: str, payload: dict[str, Any] | None = None, *, timeout: float) -> Any:
        answer = self._call(verb, payload, timeout, push=not self._pushed)
        if isinstance(answer, dict) and answer.get("benchlab_bootstrap") == "missing":
            answer = self._call(verb, payload, timeout, push=True)
        self._pushed = True
        if not isinstance(answer, dict) or "benchlab_bootstrap" in answer:
            raise DeviceError(
                f"device {self.device_id!r}: agent {verb}: not one JSON object: {answer!r:.200}",
                self.device_id,
            )
        return answer

    def _call(
        self, verb: str, payload: dict[str, Any] | None, timeout: float, *, push: bool
    ) -> Any:
        where = f"device {self.device_id!r}: agent {verb} via {self.prefix[0]}"
        blob, sha = self._app()
        header = {
            "sha": sha,
            "app": push,
            "verb": verb,
            "env": self.config.env,
            "cwd": self.config.workdir,
        }
        data = json.dumps(header).encode() + b"\n"
        if push:
            data += blob + b"\n"
        if payload is not None:
            data += json.dumps(payload).encode()
        argv = [*self.prefix, self.config.python, "-c", BOOTSTRAP, verb]
        done = run_agent_process(argv, data, timeout=timeout, where=where, device_id=self.device_id)
        out, err, code = done.out, done.err, done.returncode
        try:
            answer = json.loads(out)
        except (ValueError, RecursionError):  # a hostile device answers 100k `[`
            answer = None
        if code in PREFIX_FAILURE_CODES or (code < 0):
            raise DeviceError(
                f"{where} failed (exit {code}): {tail(err) or tail(out) or 'no output'}",
                self.device_id,
            )
        if answer is None:
            lowered = err.lower()
            hint = next((text for text in PREFIX_FAILURE_TEXT if text in lowered), None)
            reason = tail(err) or tail(out) or "no output"
            raise DeviceError(
                f"{where}: no JSON answer (exit {code}"
                + (f", {hint}" if hint else "")
                + f"): {reason}",
                self.device_id,
            )
        if code != 0:
            error = answer.get("error") if isinstance(answer, dict) else None
            raise DeviceError(
                f"{where} failed (exit {code}): {error or tail(err) or 'no output'}",
                self.device_id,
            )
        return answer
