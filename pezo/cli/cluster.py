"""``--jobs`` / ``--scheduler``: where a command's runs go (``pezo.executor``), shared by sweep, report and explore.

``executor_from_args(args)`` checks both options (one ``CLIError`` naming the option) and opens the executor
before the command writes anything, so an unreachable scheduler leaves nothing behind.
"""

from __future__ import annotations

import contextlib

from pezo.cli.args import CLIError, raw

MAX_JOBS = 64


def add_executor_args(p, what: str = "runs") -> None:
    p.add_argument(
        "--jobs",
        type=raw,
        default=None,
        help=f"local Dask worker processes for the {what}, 1..{MAX_JOBS} "
        "(default: the machine's cores; 1 = in this process, no cluster)",
    )
    p.add_argument(
        "--scheduler",
        type=str,
        default=None,
        help="run on an existing Dask cluster: its scheduler's "
        "address tcp://HOST:PORT (dask scheduler + dask worker, or dask-jobqueue on Slurm); "
        "$PEZO_SCHEDULER_TIMEOUT seconds (default 10) to answer",
    )


def check_executor_args(args) -> None:
    """--jobs, --scheduler and (with --scheduler) $PEZO_SCHEDULER_TIMEOUT, or one CLIError naming the bad one."""
    jobs, scheduler = getattr(args, "jobs", None), getattr(args, "scheduler", None)
    if scheduler is not None:
        if jobs is not None:
            raise CLIError(
                "--jobs sets the workers of the local cluster; with --scheduler the cluster's own "
                "workers run the jobs (give one of them)"
            )
        from pezo.executor import check_address, scheduler_timeout

        try:
            check_address(scheduler)
        except ValueError as exc:
            raise CLIError(f"--{exc}") from None
        try:  # read only with --scheduler: a bad value is refused before anything starts
            scheduler_timeout()
        except ValueError as exc:
            raise CLIError(str(exc)) from None
    elif jobs is not None and (not isinstance(jobs, int) or not 1 <= jobs <= MAX_JOBS):
        raise CLIError(f"--jobs must be an integer in 1..{MAX_JOBS}, got {jobs!r}")


@contextlib.contextmanager
def executor_from_args(args):
    """The executor of ``--jobs`` / ``--scheduler`` (``pezo.executor.open_executor``); an unreachable
    scheduler is a ``CLIError`` naming --scheduler."""
    from pezo.executor import SchedulerUnreachable, open_executor

    check_executor_args(args)
    with contextlib.ExitStack() as stack:
        try:
            executor = stack.enter_context(open_executor(getattr(args, "jobs", None), getattr(args, "scheduler", None)))
        except SchedulerUnreachable as exc:
            raise CLIError(f"--{exc}") from None
        yield executor
