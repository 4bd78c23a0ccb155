"""`bench export DIR [--serve]`: Prometheus metrics of a sweep directory."""

from __future__ import annotations

import argparse
from pathlib import Path

from benchlab.cli.args import count, port, positive


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "export",
        help="print or serve Prometheus metrics of a sweep directory",
        description="Reads a sweep directory (experiments/benchmark/runs/sweeps/EXPERIMENT) "
        "and its records from disk at every scrape: a live sweep and a finished one serve "
        "the same metrics. Without --serve, prints one scrape and exits.",
        epilog="example: bench export experiments/benchmark/runs/sweeps/local --serve --port 10058",
    )
    parser.add_argument("sweep_dir", type=Path, metavar="DIR", help="a runs/sweeps/<name> dir")
    parser.add_argument("--serve", action="store_true", help="serve /metrics over HTTP")
    parser.add_argument("--port", type=port, default=10058, help="default: 10058")
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1, loopback only)"
    )
    parser.add_argument(
        "--idle-timeout",
        type=positive,
        default=None,
        metavar="SECONDS",
        help="close a connection whose request head is not complete this long after it "
        "connected, however slowly its bytes keep arriving (default: 5)",
    )
    parser.add_argument(
        "--workers",
        type=count,
        default=None,
        help="threads answering complete requests; idle or trickling connections never "
        "hold one (default: 4)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    # lazy: start-up time, only the verb that runs loads its library
    import sys

    from benchlab.errors import ConfigError
    from benchlab.observe.exporter import IDLE_TIMEOUT_S, make_server, scrape
    from benchlab.observe.server import WORKERS

    if not args.serve:
        sys.stdout.write(scrape(args.sweep_dir))
        return 0
    idle = IDLE_TIMEOUT_S if args.idle_timeout is None else args.idle_timeout
    workers = WORKERS if args.workers is None else args.workers
    if not idle > 0:
        raise ConfigError(f"--idle-timeout {args.idle_timeout}: must be more than 0")
    if workers < 1:
        raise ConfigError(f"--workers {args.workers}: must be at least 1")
    try:
        server = make_server(
            args.sweep_dir, args.port, args.host, idle_timeout_s=idle, workers=workers
        )
    except OSError as exc:
        raise ConfigError(
            f"--port {args.port}: cannot listen on {args.host}: {exc.strerror}"
        ) from None
    host, port = server.server_address[:2]
    assert isinstance(host, str)  # an AF_INET or AF_INET6 server's address
    print(f"serving {args.sweep_dir} at http://{host}:{port}/metrics (Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0
