"""The agent's verbs: read an optional JSON payload on stdin, print ONE JSON object.

Exit status 0 means the answer is the verb's result. Any other status means the agent could
not do what was asked, and the one JSON object printed is `{"error": "..."}`: the controller
turns that into a DeviceError ("I could not look"), never into a "no".
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

VERBS = ("sysinfo", "clock", "exists", "run", "reference", "system", "membw", "gemm")


class AgentFailure(Exception):
    """The agent cannot answer; printed as {"error": ...} with a non-zero exit."""


def agent_path() -> str:
    """What `{agent}` means in a task's argv: a path that `python <path> VERB` runs.

    Inside the zipapp that is the .pyz file itself; from a source tree it is the package
    directory (its __main__.py fixes sys.path when run that way).
    """
    package_dir = os.path.dirname(os.path.abspath(__file__))
    archive = os.path.dirname(os.path.dirname(package_dir))
    return archive if os.path.isfile(archive) else package_dir


def _read_payload(stdin: Any) -> dict[str, Any]:
    if stdin is None or stdin.isatty():
        return {}
    text = stdin.read()
    if not text.strip():
        return {}
    try:
        payload = json.loads(text)
    except ValueError as exc:
        raise AgentFailure(f"payload on stdin is not JSON: {exc}") from exc
    if not isinstance(payload, dict):
        raise AgentFailure("payload on stdin must be a JSON object")
    return payload


def exists(payload: dict[str, Any]) -> dict[str, Any]:
    """Is a binary on PATH / a module importable? Raises AgentFailure when it cannot tell."""
    kind = payload.get("kind")
    name = payload.get("name")
    if kind not in ("binary", "module") or not isinstance(name, str) or not name:
        raise AgentFailure('exists: payload must be {"kind": "binary"|"module", "name": str}')
    if kind == "binary":
        import shutil

        try:
            found = shutil.which(name)
        except OSError as exc:
            raise AgentFailure(f"exists: cannot search PATH for {name!r}: {exc}") from exc
        return {"exists": found is not None, "path": found}
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except ModuleNotFoundError as exc:
        # A missing parent package is a plain "no"; anything else missing inside a parent's
        # import is a broken environment, and the agent cannot tell.
        missing = exc.name or ""
        if name == missing or name.startswith(missing + "."):
            return {"exists": False, "path": None}
        raise AgentFailure(f"exists: importing a parent of {name!r} failed: {exc}") from exc
    except Exception as exc:
        raise AgentFailure(
            f"exists: cannot tell whether module {name!r} exists: {type(exc).__name__}: {exc}"
        ) from exc
    origin = getattr(spec, "origin", None) if spec is not None else None
    return {"exists": spec is not None, "path": origin}


def _gemm(payload: dict[str, Any]) -> dict[str, Any]:
    """`gemm`: the float32 GEMM rate numpy's BLAS reaches here (`agent.gemm`)."""
    # lazy: start-up time, the bundle loads only the verb that runs
    from benchlab.agent.gemm import MAX_N, MAX_REPEATS, NotAvailable, measure

    n, repeats = payload.get("n"), payload.get("repeats")
    bad = [v for v in (n, repeats) if v is not None and (type(v) is not int or v <= 0)]
    if bad or (n is not None and n > MAX_N) or (repeats is not None and repeats > MAX_REPEATS):
        raise AgentFailure(
            f"gemm: n must be an integer in 1..{MAX_N} and repeats in 1..{MAX_REPEATS}"
        )
    try:
        return measure(n=n, repeats=repeats or 5)
    except NotAvailable as exc:
        raise AgentFailure(f"gemm: {exc}") from exc


def _dispatch(verb: str, args: list[str], stdin: Any, started_at: float) -> dict[str, Any]:
    if verb == "clock":
        return {"started_at": started_at, "finished_at": time.time()}
    if verb == "sysinfo":
        # lazy: start-up time, the bundle loads only the verb that runs
        from benchlab.agent.sysinfo import collect

        return collect()
    if verb == "exists":
        return exists(_read_payload(stdin))
    if verb == "system":
        # lazy: start-up time, the bundle loads only the verb that runs
        from benchlab.agent.sysstate import advice, snapshot

        state = snapshot()
        return {"state": state, "advice": advice(state)}
    if verb == "membw":
        # lazy: start-up time, the bundle loads only the verb that runs
        from benchlab.agent.membw import measure

        payload = _read_payload(stdin)
        size, threads = payload.get("size_bytes"), payload.get("threads")
        if not all(v is None or (isinstance(v, int) and v > 0) for v in (size, threads)):
            raise AgentFailure("membw: size_bytes and threads must be positive integers")
        return measure(size=size, threads=threads)
    if verb == "gemm":
        return _gemm(_read_payload(stdin))
    if verb == "run":
        # lazy: start-up time, the bundle loads only the verb that runs
        from benchlab.agent.runner import TaskError, run_task

        try:
            return run_task(_read_payload(stdin), python=sys.executable, agent=agent_path())
        except TaskError as exc:
            raise AgentFailure(str(exc)) from exc
    if verb == "reference":
        # lazy: start-up time, the bundle loads only the verb that runs
        from benchlab.agent.reference_bench import UsageError
        from benchlab.agent.reference_bench import main as reference_main

        try:
            return reference_main(args)
        except UsageError as exc:
            raise AgentFailure(str(exc)) from exc
    raise AgentFailure(f"unknown verb {verb!r}; expected one of {', '.join(VERBS)}")


def main(
    argv: list[str] | None = None,
    *,
    started_at: float | None = None,
    stdin: Any = None,
    stdout: Any = None,
) -> int:
    """Run one verb; print its JSON answer (or {"error": ...}); return the exit status."""
    started = time.time() if started_at is None else started_at
    args = sys.argv[1:] if argv is None else argv
    stdin = sys.stdin if stdin is None else stdin
    stdout = sys.stdout if stdout is None else stdout
    status = 0
    if not args:
        answer: dict[str, Any] = {"error": f"usage: agent VERB (one of {', '.join(VERBS)})"}
        status = 2
    else:
        try:
            answer = _dispatch(args[0], args[1:], stdin, started)
        except AgentFailure as exc:
            answer, status = {"error": str(exc)}, 1
        except Exception as exc:
            answer, status = {"error": f"agent {args[0]}: {type(exc).__name__}: {exc}"}, 1
    stdout.write(json.dumps(answer, sort_keys=True) + "\n")
    stdout.flush()
    return status
