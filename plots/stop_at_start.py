"""SIGINT and SIGTERM while a plots command starts: one line, exit 130 / 143, nothing written.

make_all.py and every figure script import this module as their first statement and call `guard` (make_all) or
`guard_figure` (a figure script) before they import matplotlib and numpy (about a second), so that a signal in that
time ends the process at once with one line on stderr, instead of a KeyboardInterrupt traceback (SIGINT) or a silent
death (SIGTERM). Nothing has been written by then, so nothing needs undoing. The command's own handlers replace these
once it is ready to clean up after itself (style.stop_on_signals, style.stop_between_steps).

Only the standard library's os, signal and sys are imported here: the module must load in well under a millisecond.
A signal that comes while Python itself starts, before the command's first line, is still Python's to handle.
"""

from __future__ import annotations

import os
import signal
import sys

# numpy's BLAS runs on one thread: a thread it starts at import would take SIGINT and SIGTERM whenever the main thread
# holds them back (style._signals_held masks the calling thread only), and run the handler in the middle of a figure's
# renames. The figures need no parallel BLAS. Set before numpy loads, which every script does after this module.
for _threads in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_threads] = "1"

# The line written when a signal stops the command, with {signal} for the signal's name (SIGINT, SIGTERM).
_notice = "{signal}: stopped while loading, nothing written"


def _stop(signum, _frame) -> None:
    """Write the notice as one line to stderr (os.write: no Python buffer that a half-done print could hold) and exit
    at once with 128 + the signal number."""
    os.write(2, (_notice.format(signal=signal.Signals(signum).name) + "\n").encode())
    os._exit(128 + signum)


def guard(module_name: str, notice: str = _notice) -> None:
    """When `module_name` (the caller's __name__) is "__main__" (the command; imported by make_all or a test it leaves
    the signal handlers alone): from now on SIGINT and SIGTERM end the process at once, writing `notice` ({signal}
    replaced by the signal's name) as one line to stderr, with exit status 130 / 143.

    With the environment variable KVB_TEST_STOP_AT=loading (the tests of interrupted runs, as
    style._test_stop_point) the process stops itself (SIGSTOP) right after, so that a test can signal it there."""
    global _notice
    if module_name != "__main__":
        return
    _notice = notice
    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    if os.environ.get("KVB_TEST_STOP_AT") == "loading":
        del os.environ["KVB_TEST_STOP_AT"]
        os.kill(os.getpid(), signal.SIGSTOP)


def figure_name(name: str, state_dtype: str | None = None) -> str:
    """The file name (without extension) of script `name`'s figure of `state_dtype` rows: NAME for fp32 (or every
    dtype), NAME_bf16 for bf16, so that a bf16 figure never replaces the fp32 one."""
    return name if state_dtype in (None, "fp32") else f"{name}_{state_dtype}"


def state_dtype_asked(argv) -> str | None:
    """The value of the last --state-dtype in `argv` (also written --state-dtype=VALUE, or shortened to a prefix down
    to --s, as argparse accepts), or None when there is none; read before the arguments are parsed, to name the figure
    a signal stops."""
    value = None
    args = list(argv)
    for i, arg in enumerate(args):
        if arg == "--":
            break
        flag, eq, rest = arg.partition("=")
        if len(flag) >= 3 and "--state-dtype".startswith(flag):
            value = rest if eq else (args[i + 1] if i + 1 < len(args) else None)
    return value


def figure_notice(figure: str) -> str:
    """The notice of a figure script stopped before it drew `figure` (a figure_name)."""
    return f"{figure}: stopped by {{signal}} before drawing, nothing written"


def guard_figure(name: str, module_name: str, with_state_dtype: bool = True) -> None:
    """`guard` for the figure script `name` (`module_name`: the script's __name__): the notice names the figure it
    would draw, NAME, or NAME_bf16 when the command line asks for --state-dtype bf16 (`with_state_dtype`: the script
    has that option). style.run_figure names the figure again (name_figure) once the arguments are parsed."""
    dtype = state_dtype_asked(sys.argv[1:]) if with_state_dtype else None
    guard(module_name, figure_notice(figure_name(name, dtype if dtype in ("fp32", "bf16") else None)))


def name_figure(figure: str) -> None:
    """Name `figure` (a figure_name, from the parsed arguments) in the notice of a figure script's guard."""
    global _notice
    _notice = figure_notice(figure)
