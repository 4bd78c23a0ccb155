"""`bench stop EXPERIMENT`: ask a running sweep to stop, from any machine sharing the workspace.

It leaves `runs/sweeps/<experiment>/stop`; the sweep looks for it at least every second, lets
the points in flight finish and leaves the rest pending, so `bench run` resumes them later.
"""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "stop",
        help="ask a running sweep to stop (in-flight points finish, the rest stay pending)",
        description="Leave a stop request for a running sweep of EXPERIMENT. The sweep "
        "honours it within a second or two: points in flight finish, the others stay "
        "pending and a later `bench run` resumes them.",
    )
    parser.add_argument("experiment", metavar="EXPERIMENT", help="the experiment to stop")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.layout import Store, find_store
    from benchlab.sweep.lock import request_stop

    holder = request_stop(Store(find_store()), args.experiment)
    print(
        f"stop requested for {args.experiment} (pid {holder.get('pid', '?')}); points in "
        "flight will finish, the rest stay pending for `bench run` to resume"
    )
    return 0
