"""Shared style and CSV helpers for the figures in plots/.

Every figure script reads one CSV written by `kvb sweep` or `kvb capacity` (results/NAME.csv) through `read_csv`,
which applies kvb's validation of result CSVs (result_csv.py) and checks the columns the figure needs, draws with the
sizes and colours below, puts a footnote naming the GPU, date and git revision under the axes (`footnote`), and
writes NAME.png and NAME.pdf with `save`: each to a temporary file in the same folder, renamed over the figure only
once both are whole, so an interrupted run leaves every figure as it was or new.

Only the standard library's csv module and matplotlib (Agg backend, no display needed) are used.
Bad input (a missing file, an empty path, a path too long for the file system, a CSV kvb would refuse, a missing column,
a value that is not a number, no usable rows) prints one line to stderr and exits with status 2, writing nothing; a disk
that fills up or fails while a figure is written prints one line and exits with status 1. SIGINT and SIGTERM stop a
script after removing its temporary files (and the folders made for them), with exit status 130 and 143; while it
starts, before its arguments are read and its libraries loaded, they stop it at once (stop_at_start). A warning raised
while a figure is made (matplotlib's, say) is one line on stderr naming the figure (show_warning).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import errno
import math
import os
import signal
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Iterable, Mapping, NoReturn, Sequence

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402

import result_csv  # noqa: E402
import stop_at_start  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO_ROOT / "results"
FIGURES_DIR = RESULTS_DIR / "figures"

# Figure sizes in inches; the PNG is written at DPI dots per inch.
SINGLE = (8.4, 4.6)
TALL = (7.0, 6.4)
TALL_WIDE = (8.4, 6.6)
DPI = 160

RECURRENT_COLOUR = "#222222"
FLOOR_COLOUR = "#8c8c8c"
ANCHOR_COLOUR = "#d62728"
# Peers other than fla (whose series take ANCHOR_COLOUR, measured or recorded), in turn.
PEER_COLOURS = ("#ff7f0e", "#9467bd")
IDEAL_COLOUR = "#8c8c8c"

# Buffer sizes B run 1 .. 64 in powers of two; each gets a fixed colour from a sequential map so that the same B has
# the same colour in every figure.
_BUFFER_MAP = "viridis"
_BUFFER_LOG2_MAX = 6  # B = 64


def buffer_colour(buffer_size: int):
    """RGBA colour of KVBuffer with buffer size `buffer_size` (tokens): viridis at 0.08 + 0.84 * log2(B) / 6, B clipped
    to 1..64."""
    t = min(max(math.log2(max(buffer_size, 1)) / _BUFFER_LOG2_MAX, 0.0), 1.0)
    return matplotlib.colormaps[_BUFFER_MAP](0.08 + 0.84 * t)


def apply_rc() -> None:
    """Font sizes, grid and line widths used by every figure."""
    plt.rcParams.update(
        {
            "font.size": 9,
            "axes.titlesize": 10,
            "axes.labelsize": 9,
            "legend.fontsize": 8,
            "xtick.labelsize": 8,
            "ytick.labelsize": 8,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "grid.linewidth": 0.5,
            "lines.linewidth": 1.4,
            "lines.markersize": 4,
            "errorbar.capsize": 2,
            "savefig.dpi": DPI,
            "pdf.fonttype": 42,
        }
    )


apply_rc()


# ----------------------------------------------------------------------------------------------------------- CSV


_errors_named = ""  # the figure make_all is drawing (errors_named), named at the start of each error line (fail)


def fail(message: str, status: int = 2) -> NoReturn:
    """Print `message` as one line on stderr (line breaks written \\n and \\r, result_csv.one_line), after "FIGURE: "
    while make_all draws FIGURE (errors_named), and exit with `status`: 2 (bad input) unless told otherwise."""
    print(result_csv.one_line(f"{_errors_named}: {message}" if _errors_named else message), file=sys.stderr)
    raise SystemExit(status)


@contextlib.contextmanager
def errors_named(figure: str):
    """Inside the block, every error line of fail starts with "FIGURE: ". make_all draws its figures in one process
    and one stderr, where a figure script's error (about a CSV that several figures read, say) would not say which
    figure failed."""
    global _errors_named
    before = _errors_named
    _errors_named = figure
    try:
        yield
    finally:
        _errors_named = before


def refuse_empty(flag: str, value: str, allowed: str) -> None:
    """Exit 2 with "FLAG: empty value (allowed: ALLOWED)", as kvb words it, when a path flag's `value` is empty: an
    empty path would name the current folder (and no file at all), not what the flag asks for."""
    if value == "":
        fail(f"{flag}: empty value (allowed: {allowed})")


def check_path_fits(flag: str, path, inside: str = "") -> None:
    """Exit 2 with one line naming `flag` and `path` (shortened when long) when the path, with `inside` made in it,
    does not fit the file system's limits (result_csv.path_too_long), before anything looks it up or writes."""
    problem = result_csv.path_too_long(path, inside)
    if problem:
        fail(f"{flag} {result_csv.shown_value(str(path))}: {problem}")


def temporary_name(figure: str) -> str:
    """The longest name a figure's files take while being written (write_files_atomic): FIGURE.png.tmp.XXXXXXXX."""
    return f"{figure}.png.tmp.XXXXXXXX"


def require_columns(df_or_rows, names: Iterable[str], path) -> None:
    """Exit 2 with "CSV PATH lacks column NAME" when any of `names` is not a column.

    `df_or_rows` is a header (a sequence of column names), a csv.DictReader, or a list of row dicts (their keys are
    the header). Several missing columns are named in one line: "lacks columns A, B".
    """
    if isinstance(df_or_rows, csv.DictReader):
        header = list(df_or_rows.fieldnames or [])
    elif isinstance(df_or_rows, Sequence) and df_or_rows and isinstance(df_or_rows[0], Mapping):
        header = list(df_or_rows[0].keys())
    else:
        header = list(df_or_rows)
    missing = [n for n in names if n not in header]
    if len(missing) == 1:
        fail(f"CSV {path} lacks column {missing[0]}")
    if missing:
        fail(f"CSV {path} lacks columns {', '.join(missing)}")


def read_result_rows(path, kind: str) -> list[dict[str, str]]:
    """Every row of the result CSV of `kind` at `path` (result_csv.read: kvb's validation); exits 2 with its one-line
    message when the file is missing, malformed, of another kind or breaks a rule."""
    try:
        return result_csv.read(path, kind)
    except result_csv.CsvError as e:
        fail(str(e))


def read_csv(path, required: Iterable[str], kind: str) -> list[dict[str, str]]:
    """Rows of the result CSV of `kind` at `path` as dicts (strings), after kvb's validation (read_result_rows) and a
    check that its header has every `required` column.

    Rows whose `status` is not `ok` are dropped. Exits 2 when the file is missing, malformed or breaks a rule, a
    column is missing, or no row is left.
    """
    rows = read_result_rows(path, kind)
    if rows:
        require_columns(rows, required, path)
    rows = [r for r in rows if r.get("status", "ok") == "ok"]
    if not rows:
        fail(f"CSV {path} has no rows with status ok")
    return rows


def rows_of_state_dtype(rows: Sequence[Mapping[str, str]], state_dtype: str, path) -> list:
    """The rows whose state_dtype is `state_dtype` (a blank or absent state_dtype counts as fp32: the CSVs written
    before the column held fp32 states); exits 2 when none is."""
    kept = [r for r in rows if ((r.get("state_dtype") or "").strip() or "fp32") == state_dtype]
    if not kept:
        fail(f"CSV {path} has no rows with status ok and state_dtype {state_dtype} (allowed: --state-dtype fp32 or "
             "bf16, a value the CSV holds)")
    return kept


def num(row: Mapping[str, str], column: str, path) -> float:
    """Value of `column` in `row` as a float; exits 2 naming the file, column and value when it is not a number (digits
    are ASCII 0-9 only, as kvb reads them: float() alone would take other scripts' digits too)."""
    text = (row.get(column) or "").strip()
    try:
        if not text.isascii():
            raise ValueError(text)
        return float(text)
    except ValueError:
        fail(f"CSV {path} column {column}: '{text}' is not a number")


def is_empty(row: Mapping[str, str], column: str) -> bool:
    """True when `column` is absent from `row` or blank (an axis that does not apply, a count not measured)."""
    return not (row.get(column) or "").strip()


def distinct(rows: Iterable[Mapping[str, str]], column: str) -> list[str]:
    """Distinct non-empty values of `column`, in order of first appearance."""
    seen: dict[str, None] = {}
    for r in rows:
        v = (r.get(column) or "").strip()
        if v:
            seen.setdefault(v, None)
    return list(seen)


def require_single(rows: Sequence[Mapping[str, str]], columns: Iterable[str], path) -> None:
    """Exit 2 when the rows hold more than one value of any of `columns` (figures plot one model shape at a time)."""
    for c in columns:
        values = distinct(rows, c)
        if len(values) > 1:
            fail(f"CSV {path} column {c} holds several values ({', '.join(values)}); plot one at a time")


# -------------------------------------------------------------------------------------------------------- figure


def footnote_text(rows: Sequence[Mapping[str, str]], source) -> str:
    """One line naming the GPU, the state dtype where it is not fp32, driver, CUDA runtime, measurement date(s) (UTC),
    git revision(s) and the source CSV.

    Read from the `gpu`, `driver`, `cuda`, `timestamp` (ISO 8601) and `git_sha` columns; several values are joined
    with " + ", dates as a range.
    """
    gpu = " + ".join(distinct(rows, "gpu")) or "GPU unknown"
    driver = " + ".join(distinct(rows, "driver"))
    cuda = " + ".join(distinct(rows, "cuda"))
    dates = sorted({t[:10] for t in distinct(rows, "timestamp")})
    date = (dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}") if dates else "date unknown"
    sha = " + ".join(distinct(rows, "git_sha")) or "unknown"
    dtypes = state_dtypes_named(rows)
    parts = [gpu] + ([dtypes] if dtypes else [])
    if driver:
        parts.append(f"driver {driver}")
    if cuda:
        parts.append(f"CUDA {cuda}")
    parts += [f"measured {date} UTC", f"git {sha}", f"data {_display_path(source)}"]
    return " | ".join(parts)


def state_dtypes_named(rows: Sequence[Mapping[str, str]]) -> str:
    """"bf16 states" (the dtypes joined with " + ") when the rows' states are not all fp32, else ""."""
    dtypes = distinct(rows, "state_dtype")
    return f"{' + '.join(dtypes)} states" if dtypes and dtypes != ["fp32"] else ""


def state_dtype_title(rows: Sequence[Mapping[str, str]]) -> str:
    """", bf16 states" to end a title when the rows' states are not all fp32 (state_dtypes_named), else ""."""
    named = state_dtypes_named(rows)
    return f", {named}" if named else ""


def footnote(fig, rows: Sequence[Mapping[str, str]], source, extra: str | None = None) -> None:
    """Place `footnote_text` (and an optional second line `extra`) under the figure, left-aligned, small grey."""
    text = footnote_text(rows, source)
    if extra:
        text = extra + "\n" + text
    fig.text(0.005, -0.005, text, ha="left", va="top", fontsize=6.5, color="#555555")


def log2_axis(ax, values: Iterable[float], label: str) -> None:
    """Log base-2 x axis with ticks at `values` (batch sizes, buffer sizes, context lengths), labelled as plain
    numbers, and the x label `label` (with its unit). Values that are not powers of two (a context length of 15 next
    to 16) get no tick of their own, so that labels never overlap."""
    ticks = sorted({float(v) for v in values if float(v) > 0 and math.log2(float(v)).is_integer()})
    if not ticks:
        ticks = sorted({float(v) for v in values})
    ax.set_xscale("log", base=2)
    ax.set_xticks(ticks)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(label)


def log2_batch_axis(ax, batches: Iterable[float]) -> None:
    """Log base-2 x axis for batch sizes, ticks at the batch sizes present, labelled as plain integers."""
    log2_axis(ax, batches, "batch (requests)")


def plain_log_axis(axis) -> None:
    """Label a log axis (ax.xaxis or ax.yaxis) with plain numbers (0.5, 1, 10, 100) instead of powers of ten."""
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))


def log_axis_125(axis) -> None:
    """Log scale ticks at 1, 2 and 5 times the powers of ten on `axis` (ax.xaxis or ax.yaxis), labelled as plain
    numbers, so that an axis spanning one or two decades still carries several labels. Set the log scale first."""
    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def legend_outside(ax, **kwargs) -> None:
    """Legend to the right of the axes, so it never covers data."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, frameon=False, **kwargs)


def figure(size=SINGLE, nrows: int = 1, **kwargs):
    """A figure with `nrows` stacked axes sharing x (constrained layout); returns (fig, axes list)."""
    fig, axes = plt.subplots(nrows, 1, figsize=size, layout="constrained", squeeze=False, **kwargs)
    return fig, [a[0] for a in axes]


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived; `code` is the exit status it asks for (130 or 143)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.code = 128 + signum


def _raise_interrupted(signum, _frame) -> NoReturn:
    raise Interrupted(signum)


def stop_on_signals() -> None:
    """Turn SIGINT and SIGTERM into `Interrupted` (so that `finally` blocks remove temporary files); call once in a
    command-line entry point."""
    signal.signal(signal.SIGINT, _raise_interrupted)
    signal.signal(signal.SIGTERM, _raise_interrupted)


_pending_signal = 0


def _record_interrupt(signum, frame) -> None:
    global _pending_signal
    if _pending_signal:
        _raise_interrupted(signum, frame)
    _pending_signal = signum
    name = signal.Signals(signum).name
    # The figure under way (run_figure's, as its warnings name it) is named, as make_all's other lines about it are.
    notice = (f"{_figure_under_way}: {name}: stopping after this figure" if _figure_under_way
              else f"{name}: stopping before the next figure")
    # A terminal has echoed ^C where its cursor was: there the notice starts on a line of its own; elsewhere (a pipe, a
    # file, a SIGTERM) a leading line feed would only leave an empty line.
    on_terminal = signum == signal.SIGINT and sys.stderr is not None and sys.stderr.isatty()
    print(("\n" if on_terminal else "") + f"{notice} (send it again to stop at once)", file=sys.stderr)


def stop_between_steps() -> None:
    """Like kvb's between-steps mode: the first SIGINT or SIGTERM is recorded (pending_interrupt) so that a loop can
    stop between its steps; a second one raises `Interrupted` at once."""
    signal.signal(signal.SIGINT, _record_interrupt)
    signal.signal(signal.SIGTERM, _record_interrupt)


def pending_interrupt() -> int:
    """128 + the signal recorded by stop_between_steps (130 or 143), 0 when none."""
    return 128 + _pending_signal if _pending_signal else 0


def _test_stop_point(where: str) -> None:
    """For the tests of interrupted runs (as kvb's KVB_TEST_STOP_AT): the first time the process gets here with the
    environment variable KVB_TEST_STOP_AT equal to `where`, it stops itself (SIGSTOP)."""
    if os.environ.get("KVB_TEST_STOP_AT") == where:
        del os.environ["KVB_TEST_STOP_AT"]
        os.kill(os.getpid(), signal.SIGSTOP)


@contextlib.contextmanager
def _signals_held():
    """SIGINT and SIGTERM held back inside the block (handled when it ends)."""
    held = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _new_file_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def write_files_atomic(writers: Mapping[Path, object]) -> None:
    """Replace each path of `writers` with what its writer (a function of a binary file object) writes, all or none:
    every file goes to a temporary PATH.tmp.XXXXXX in its folder (created when missing), is flushed to disk, and only
    when all are whole are they renamed over their paths, with SIGINT and SIGTERM held back meanwhile. An existing
    file keeps its permission bits; a new one gets 0666 less the umask. A path that exists and is not a regular file
    (a folder) refuses the whole write with OSError, checked before anything is written and again before the first
    rename. On any exception (an interrupt included) the temporaries are removed, the folders made for them removed
    again while empty, and the files left as they were; once the files are written, the folders made that they do not
    lie in (NEW, made only to reach NEW/..) are removed again too."""
    _refuse_targets_not_files(writers)  # before any folder or file is made
    temporaries: list[tuple[str, Path]] = []
    folders: list[Path] = []  # the folders made here, outermost first: removed again unless the files lie in them
    written = False
    try:
        for path, write in writers.items():
            path = Path(path)
            with _signals_held():  # no signal between making a folder and listing it for removal
                folders += _missing_folders(path.parent)
                path.parent.mkdir(parents=True, exist_ok=True)
            _test_stop_point("out-dir")
            with _signals_held():  # no signal between creating the temporary and listing it for removal
                fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f"{path.name}.tmp.")
                temporaries.append((tmp, path))
            with os.fdopen(fd, "wb") as f:
                write(f)
                f.flush()
                _test_stop_point("savefig")
                os.fsync(f.fileno())
            os.chmod(tmp, path.stat().st_mode & 0o7777 if path.exists() else _new_file_mode())
        with _signals_held():
            # Again just before renaming (one may have appeared meanwhile): a rename that failed after another had
            # replaced its file would leave the figure's two files from different runs.
            _refuse_targets_not_files(writers)
            for tmp, path in temporaries:
                os.replace(tmp, path)
            temporaries.clear()
            written = True
    finally:
        with _signals_held():  # a second signal does not cut the removal short
            for tmp, _ in temporaries:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
            # The files' folders, with links and '..' resolved while the folders made are still there: NEW/.. is NEW's
            # parent, so NEW holds nothing written and goes again.
            homes = [Path(os.path.realpath(Path(path).parent)) for path in writers] if written else []
            for folder in reversed(folders):
                if any(home.is_relative_to(os.path.realpath(folder)) for home in homes):
                    continue
                with contextlib.suppress(OSError):  # one that something else has put a file in stays
                    folder.rmdir()


class TargetNotAFile(OSError):
    """A file to write exists and is not a regular file; its strerror names the file and what is allowed there."""


def _refuse_targets_not_files(paths: Iterable[Path]) -> None:
    """Raise TargetNotAFile when any of `paths` exists and is not a regular file (a folder, a FIFO; a link is judged
    by what it points to), which a rename could not replace or should not."""
    for path in map(Path, paths):
        if path.exists() and not path.is_file():
            raise TargetNotAFile(errno.EISDIR if path.is_dir() else errno.EEXIST,
                          f"{path.name} exists and is not a file (allowed: a file to replace, or none)")


def _missing_folders(folder: Path) -> list[Path]:
    """`folder` and those of its parents that do not exist, outermost first."""
    missing = []
    while not folder.exists() and not folder.is_symlink() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing[::-1]


def figure_paths(out_dir, name: str) -> list[Path]:
    """The files of figure `name`: OUT_DIR/NAME.png and OUT_DIR/NAME.pdf."""
    return [Path(out_dir) / f"{name}.png", Path(out_dir) / f"{name}.pdf"]


def save(fig, out_dir, name: str) -> list[Path]:
    """Write `fig` as OUT_DIR/NAME.png and OUT_DIR/NAME.pdf (creating OUT_DIR) with write_files_atomic, close it,
    return the two paths.

    The PDF carries no creation date, so regenerating unchanged data gives an identical file.
    """
    paths = figure_paths(out_dir, name)
    try:
        write_files_atomic({
            paths[0]: lambda f: fig.savefig(f, format="png", dpi=DPI, bbox_inches="tight", pad_inches=0.08),
            paths[1]: lambda f: fig.savefig(f, format="pdf", bbox_inches="tight", pad_inches=0.08,
                                            metadata={"CreationDate": None}),
        })
    finally:
        plt.close(fig)
    for p in paths:
        say(f"wrote {_display_path(p)}")
    return paths


_stdout_error: OSError | None = None


def say(line: str) -> None:
    """Print `line` on stdout, flushed at once, escaped as errors are (result_csv.escaped: a path's byte that is no
    UTF-8 as \\xNN), through write_stdout."""
    write_stdout(result_csv.escaped(line) + "\n")


def write_stdout(text: str) -> None:
    """Write `text` on stdout, flushed at once, characters stdout's encoding cannot write as backslash escapes. When
    stdout cannot take it (a full disk, a closed pipe, no stdout at all) the error is kept for stdout_failed instead of
    raised, since what the text reports (a figure written) is done, and stdout is pointed at os.devnull so that
    nothing later, Python's flush at exit among it, fails on it again."""
    global _stdout_error
    try:
        if sys.stdout is None:  # file descriptor 1 closed when Python started (`>&-`)
            raise OSError(errno.EBADF, os.strerror(errno.EBADF))
        encoding = sys.stdout.encoding or "utf-8"
        sys.stdout.write(text.encode(encoding, "backslashreplace").decode(encoding))
        sys.stdout.flush()
    except OSError as e:
        _stdout_error = _stdout_error or e
        with contextlib.suppress(OSError, ValueError, AttributeError):  # a stdout without a file descriptor
            null = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(null, sys.stdout.fileno())
            finally:
                os.close(null)


def stdout_failed() -> int:
    """1 after one line on stderr, "standard output: REASON", when a line of `say` could not be written (a write
    failure, reported once, when the command ends); else 0."""
    if _stdout_error is None:
        return 0
    print(result_csv.one_line(f"standard output: {_stdout_error.strerror or _stdout_error}"), file=sys.stderr)
    return 1


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line on stderr (PROG: error: MESSAGE, line breaks written \\n and
    \\r), exit status 2, and whose --help fails the command (exit 1, "standard output: REASON") when stdout cannot
    take it, as a figure's "wrote" lines do: argparse itself ignores the write error and exits 0."""

    def error(self, message: str):
        self.exit(2, result_csv.one_line(f"{self.prog}: error: {message}") + "\n")

    def print_help(self, file=None):
        if file is None:  # stdout: a write error is kept for stdout_failed, not dropped
            write_stdout(self.format_help())
        else:
            super().print_help(file)

    def exit(self, status=0, message=None):
        # argparse exits 0 after --help: 1 instead, with its line, when stdout could not take the help.
        super().exit(status or stdout_failed(), message)


def parser(description: str, default_csv: str) -> argparse.ArgumentParser:
    """Command line shared by the figure scripts: --csv PATH (default results/NAME.csv) and --out-dir DIR."""
    p = OneLineParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--csv", default=str(RESULTS_DIR / default_csv),
                   help=f"input CSV from kvb sweep (default results/{default_csv})")
    p.add_argument("--out-dir", default=str(FIGURES_DIR),
                   help="where NAME.png and NAME.pdf go (default results/figures)")
    return p


# What --out-dir may be, in the words of its errors.
OUT_DIR_ALLOWED = "a folder, or a path to make one at"
OUT_DIR_WRITABLE = "a folder this user can write in, or a path where one can be made"

# The figure's file name: NAME, or NAME_bf16 for bf16 rows (defined with the start-up guard, which names it too).
figure_name = stop_at_start.figure_name


def _as_made(path) -> Path:
    """`path` as it leads once the folders missing on it are made (write_files_atomic makes them): from its first part
    that does not exist on, each '..' undoes the part before it, a plain folder made there, so that NEW/../NAME is
    NAME. The parts before it are kept as given, a link among them resolved by the system as it will be."""
    parts = Path(path).parts
    for i in range(len(parts)):
        head = Path(*parts[:i + 1])
        if not head.exists() and not head.is_symlink():
            return Path(*parts[:i], os.path.normpath(Path(*parts[i:])))
    return Path(path)


def refuse_unsearchable(flag: str, value, path, allowed: str) -> None:
    """Exit 2 with "FLAG VALUE: 'FOLDER' cannot be searched: REASON (allowed: ALLOWED, reached through folders this
    user can search)" when a folder on the way to `path` (`value` itself, or where it leads) cannot be searched
    (result_csv.unsearchable_folder): looking the path up there would end in a PermissionError traceback."""
    unsearchable = result_csv.unsearchable_folder(path)
    if unsearchable:
        folder, error = unsearchable
        fail(f"{flag} {value}: '{folder}' cannot be searched: {error.strerror or error} (allowed: {allowed}, reached "
             "through folders this user can search)")


def check_out_dir(out_dir, inside: str) -> None:
    """Exit 2 with one line naming --out-dir when figures cannot go there, before anything is read or drawn: a path
    too long for the file system with `inside` (the longest name made in it) in it, a path under a folder this user
    cannot search, a file, a link to nothing, or a path under a file or a link to nothing; the path judged as it leads
    once its missing folders are made (_as_made: NEW/../FILE is FILE)."""
    check_path_fits("--out-dir", out_dir, inside)
    # The path as given, then as it leads once made (NEW/../LOCKED/X): both are looked up below.
    refuse_unsearchable("--out-dir", out_dir, out_dir, OUT_DIR_ALLOWED)
    made = _as_made(out_dir)
    if made != Path(out_dir):
        refuse_unsearchable("--out-dir", out_dir, made, OUT_DIR_ALLOWED)
    if made.is_symlink() and not made.exists():  # no folder can be made where a link already is
        fail(f"--out-dir {out_dir}: a link to '{os.readlink(made)}', which leads to nothing (allowed: "
             f"{OUT_DIR_ALLOWED})")
    if made.exists() and not made.is_dir():
        where = "exists" if made == Path(out_dir) else f"leads to '{made}', which exists"
        fail(f"--out-dir {out_dir}: {where} and is not a folder (allowed: {OUT_DIR_ALLOWED})")
    above = next((f for f in made.parents if f.exists() or f.is_symlink()), None)
    if above is not None and not above.is_dir():
        what = "a link to nothing" if not above.exists() else "not a folder"
        fail(f"--out-dir {out_dir}: '{above}' is {what} (allowed: {OUT_DIR_ALLOWED})")


# Errors of the disk written to, not of the --out-dir given: a full disk or quota, or a failing device. Writing the
# figures fails the run on them (exit 1); any other error writing them refuses the --out-dir as bad input (exit 2).
WRITE_FAILURES = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO})


def cannot_write(out_dir, files: str, error: OSError) -> NoReturn:
    """Exit with "--out-dir OUT_DIR: cannot write FILES there: REASON": status 1 for a WRITE_FAILURES error, else 2,
    the line then ending in what is allowed (a TargetNotAFile's REASON says it already)."""
    reason = str(error.strerror or error)
    if error.errno in WRITE_FAILURES:
        fail(f"--out-dir {out_dir}: cannot write {files} there: {reason}", 1)
    if not isinstance(error, TargetNotAFile):
        reason += f" (allowed: {OUT_DIR_WRITABLE})"
    fail(f"--out-dir {out_dir}: cannot write {files} there: {reason}")


class _Probed(Exception):
    """Raised by probe_out_dir's writer once its temporary file exists: the write is undone, as any failed one is."""


def probe_out_dir(out_dir, paths: Iterable[Path], files: str) -> None:
    """Exit 2 with "--out-dir OUT_DIR: cannot write FILES there: REASON" when write_files_atomic could not write
    `paths` (under `out_dir`): a folder that cannot be made (as in /proc) or written, or one of `paths` that is not a
    file; exit 1 when the disk is full or fails (cannot_write). It makes the missing folders and a first temporary
    file, and removes them again (nothing is left written)."""
    def stop(_file) -> NoReturn:
        raise _Probed

    try:
        write_files_atomic(dict.fromkeys(paths, stop))
    except _Probed:
        pass
    except OSError as e:
        cannot_write(out_dir, files, e)


def draw_figure(name: str, read_rows, build, csv_path, out_dir, phase: str | None = None,
                state_dtype: str | None = None) -> None:
    """Read the rows with `read_rows(csv_path)` (those of `state_dtype` only, when given), draw `build(rows,
    csv_path[, phase])` and save it as OUT_DIR/NAME.png and .pdf, or NAME_bf16.png and .pdf for bf16 rows, so that
    they never replace the fp32 figure. Bad input (an --out-dir too long for the file system among it) exits 2
    (SystemExit) before anything is written; an --out-dir the figure cannot be written in is refused before the CSV
    is read (check_out_dir, probe_out_dir), as make_all refuses it. A disk that fills up or fails while the figure is
    written exits 1 (cannot_write), leaving nothing written."""
    figure = figure_name(name, state_dtype)
    files = f"{figure}.png and {figure}.pdf"
    check_out_dir(out_dir, temporary_name(figure))
    # Probed as save writes, before the CSV is read and the figure drawn: a folder that cannot be made (as in /proc)
    # or written, or a figure's file that is a folder, is refused now rather than once the drawing is done.
    probe_out_dir(out_dir, figure_paths(out_dir, figure), files)
    rows = read_rows(csv_path)
    if state_dtype is not None:
        rows = rows_of_state_dtype(rows, state_dtype, csv_path)
    fig = build(rows, csv_path) if phase is None else build(rows, csv_path, phase)
    try:
        save(fig, out_dir, figure)
    except OSError as e:  # one that failed after the probe (a full disk): nothing is left there (write_files_atomic)
        cannot_write(out_dir, files, e)


_figure_under_way = ""  # the figure run_figure is making, named in its warnings (show_warning) and interrupt notice


def warning_place(filename: str) -> str:
    """Where a warning was raised, short enough for one_line to keep whole: relative to the repository (plots/style.py)
    when inside it, else to the longest sys.path folder holding it (matplotlib/figure.py), else as given."""
    path = Path(filename)
    if not path.is_absolute():  # "<frozen ...>", or a path already relative
        return filename
    path = path.resolve()
    roots = [REPO_ROOT] if path.is_relative_to(REPO_ROOT) else [
        r for r in (Path(p).resolve() for p in sys.path if p) if path.is_relative_to(r)]
    return str(path.relative_to(max(roots, key=lambda r: len(r.parts)))) if roots else filename


def show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """warnings.showwarning while a figure is made (run_figure): the warning as one line, "FIGURE: CATEGORY: MESSAGE
    (FILE:LINE)" (result_csv.one_line). Python's own writes two lines or more (the message, then the source line,
    which FILE:LINE names) and no figure, which make_all's output of many figures needs to say where it came from."""
    text = f"{category.__name__}: {message} ({warning_place(filename)}:{lineno})"
    file = sys.stderr if file is None else file
    if file is None:  # sys.stderr is None (no console): nowhere to say it, as with Python's own showwarning
        return
    with contextlib.suppress(OSError):  # a stderr that cannot take it loses the warning, not the figure
        print(result_csv.one_line(f"{_figure_under_way}: {text}" if _figure_under_way else text), file=file)


@contextlib.contextmanager
def warnings_named(figure: str):
    """Inside the block, warnings are shown by show_warning naming `figure`. The filters are the caller's, but each
    figure shows its own warnings: warnings.catch_warnings resets which were shown already, which in make_all's one
    process would otherwise hide a figure's warning when an earlier figure raised it from the same line."""
    global _figure_under_way
    before = _figure_under_way
    with warnings.catch_warnings():
        warnings.showwarning = show_warning
        _figure_under_way = figure
        try:
            yield
        finally:
            _figure_under_way = before


def run_figure(doc: str, default_csv: str, name: str, read_rows, build, argv=None, with_phase: bool = False,
               with_state_dtype: bool = True) -> int:
    """The command line of one figure script: parse --csv/--out-dir (and --phase when `with_phase`, --state-dtype
    when `with_state_dtype`: a figure that draws every state dtype has none) and draw_figure.
    Returns the exit status: 0, 2 for bad input (exits inside read_rows), 130 or 143 when SIGINT or SIGTERM stopped
    it (the figure left as it was, and named in the notice: NAME_bf16 for a bf16 figure), 1 when the disk filled up
    or failed while the figure was written (exits inside draw_figure) or when the figure was written but stdout could
    not take the lines saying so (stdout_failed; a command only)."""
    p = parser(doc.split("\n\n")[0], default_csv)
    if with_phase:
        p.add_argument("--phase", choices=("staggered", "aligned"), default="staggered",
                       help="KVBuffer buffer phases to plot (default staggered)")
    if with_state_dtype:
        p.add_argument("--state-dtype", choices=("fp32", "bf16"), default="fp32",
                       help="rows of this state dtype (default fp32; bf16 figures are saved as NAME_bf16)")
    args = p.parse_args(argv)
    refuse_empty("--csv", args.csv, f"a result CSV of kvb such as results/{default_csv}")
    refuse_empty("--out-dir", args.out_dir, OUT_DIR_ALLOWED)
    state_dtype = args.state_dtype if with_state_dtype else None
    try:
        if argv is None:  # a command: until now the start-up guard (stop_at_start) stopped it at once
            stop_at_start.name_figure(figure_name(name, state_dtype))
            stop_on_signals()
        with warnings_named(figure_name(name, state_dtype)):
            draw_figure(name, read_rows, build, args.csv, args.out_dir, args.phase if with_phase else None,
                        state_dtype)
    except Interrupted as e:
        print(f"{figure_name(name, state_dtype)}: stopped by {e}; the figure is as it was", file=sys.stderr)
        return e.code
    # The figure is written; a command whose "wrote" lines were lost exits 1 saying so (make_all, which runs it in its
    # own process, reports its stdout once, at its end).
    return stdout_failed() if argv is None else 0


def _display_path(path) -> str:
    """`path` relative to the repository root when it lies inside it, else as given, or resolved where the path as
    given no longer leads to it (NEW/.. once the folder NEW made to reach it is gone)."""
    p = Path(path).resolve()
    try:
        return str(p.relative_to(REPO_ROOT))
    except ValueError:
        return str(path) if os.path.lexists(path) else str(p)
