"""LocalTransport: the device is this machine; the agent runs as a child process.

By default it runs the same zipapp a remote device gets (`python agent.pyz VERB`), so the
local device measures through the same code path as every other device and any interpreter
(`config.python`) works without benchlab installed. `agent="module"` runs
`python -m benchlab.agent VERB` from this source tree instead.

The interpreter is `config.python` when the config names one, else the controller's own
`sys.executable` (which is the interpreter known to have numpy for the reference backend).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Literal

import benchlab
from benchlab.devices.base import Transport
from benchlab.devices.bundle import agent_zipapp
from benchlab.devices.process import run_agent_process, tail
from benchlab.errors import DeviceError
from benchlab.models import DeviceConfig


class LocalTransport(Transport):
    """Runs agent verbs on this machine; every failure of the agent itself -> DeviceError."""

    def __init__(
        self,
        device_id: str,
        config: DeviceConfig,
        *,
        agent: Literal["zipapp", "module"] = "zipapp",
    ) -> None:
        super().__init__(device_id)
        self.config = config
        self.agent = agent
        explicit = "python" in config.model_fields_set and config.python
        self.python = config.python if explicit else sys.executable
        self._zipapp: Path | None = None

    def _argv(self, verb: str) -> list[str]:
        if self.agent == "module":
            return [self.python, "-m", "benchlab.agent", verb]
        if self._zipapp is None:
            self._zipapp, _ = agent_zipapp()
        return [self.python, str(self._zipapp), verb]

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.agent == "module":
            src = str(Path(benchlab.__file__).resolve().parent.parent)
            env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
        env.update(self.config.env)
        return env

    def _cwd(self) -> str | None:
        if not self.config.workdir:
            return None
        workdir = Path(os.path.expanduser(self.config.workdir))
        try:
            workdir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DeviceError(
                f"device {self.device_id!r}: cannot use workdir {self.config.workdir!r}: {exc}",
                self.device_id,
            ) from exc
        return str(workdir)

    def call(self, verb: str, payload: dict[str, Any] | None = None, *, timeout: float) -> Any:
        where = f"device {self.device_id!r}: agent {verb}"
        argv = self._argv(verb)
        data = json.dumps(payload).encode() if payload is not None else b""
        done = run_agent_process(
            argv,
            data,
            timeout=timeout,
            where=where,
            device_id=self.device_id,
            env=self._env(),
            cwd=self._cwd(),
            what="interpreter ",
        )
        out, err = done.out, done.err
        answer: Any = None
        try:
            answer = json.loads(out)
        except (ValueError, RecursionError):  # a hostile device answers 100k `[`
            answer = None
        if done.returncode != 0:
            reason = answer.get("error") if isinstance(answer, dict) else None
            reason = reason or tail(err) or tail(out) or "no output"
            raise DeviceError(f"{where} failed (exit {done.returncode}): {reason}", self.device_id)
        if not isinstance(answer, dict):
            raise DeviceError(
                f"{where} answered something that is not one JSON object: {out[:200]!r}",
                self.device_id,
            )
        return answer
