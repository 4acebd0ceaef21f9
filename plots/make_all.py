"""Make every figure whose CSV exists: runs each registered figure script on its CSV, lists the ones skipped.

Each entry of FIGURES names a script plots/SCRIPT.py (writing OUT_DIR/SCRIPT.png and .pdf), the CSV under
results/ it reads and the command that writes that CSV. A figure whose CSV is not there is skipped, and the skip line
names the command that makes it. A new figure is one new script plus one entry here; tests/plots checks that every
figure script in plots/ is registered. STATE_DTYPE_FIGURES draws some of the same scripts from the CSVs that hold both
state dtypes, on their bf16 rows (`--state-dtype bf16`: NAME_bf16.png and .pdf).

Every CSV present is validated first (result_csv.py: kvb's rules): one that kvb would refuse stops the run before any
figure is drawn, as an --out-dir does that the figures cannot be written in (checked once, as the figure scripts check
it, and probed: style.check_out_dir, style.probe_out_dir). Each figure is written atomically (style.save). SIGINT or
SIGTERM stops the run after the figure under way (a second one at once, leaving that figure as it was), and the made
and not made ones are listed; while the plotting libraries load it stops at once, in one line, nothing written. A
warning raised while a figure is made is one line naming that figure (style.show_warning), every figure's own, and
so is an error while a figure is made (style.errors_named).

Usage: python3 plots/make_all.py [--results-dir results] [--out-dir results/figures]
Exit status: 0 when every figure whose CSV exists was made (skipped ones do not count), 1 when a script failed or
stdout could not take the lines listing them (the figures written all the same: "standard output: REASON"), 2 for
bad input (an empty path, a results folder that does not exist or lies under a folder this user cannot search, a path
too long for the file system, a CSV kvb would refuse or this user cannot read), 130 / 143 when SIGINT / SIGTERM
stopped it.
"""

from __future__ import annotations

import stop_at_start  # first, before the plotting libraries load: a signal meanwhile stops the run in one line

# Until main() installs its between-figures handlers (style.stop_between_steps), a signal ends the run at once:
# "SIGINT: stopped while loading, nothing written"; one that comes while Python itself starts, before this line, is
# Python's to handle.
stop_at_start.guard(__name__)

import importlib  # noqa: E402
import sys  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

PLOTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = PLOTS_DIR.parent
sys.path.insert(0, str(PLOTS_DIR))

import result_csv  # noqa: E402
import style  # noqa: E402


@dataclass(frozen=True)
class Figure:
    """A figure script (plots/SCRIPT.py), the CSV file name (under the results folder) it reads, and the kvb command
    that writes that CSV."""

    script: str
    csv: str
    made_by: str
    state_dtype: str = "fp32"

    @property
    def name(self) -> str:
        """The figure's file name without extension: the script's, with _bf16 for bf16 rows (style.figure_name)."""
        return style.figure_name(self.script, self.state_dtype)

    def args(self, csv_path: Path, out: Path) -> list:
        """The script's command line for this figure. The paths are joined to their flags (--csv=PATH): a separate
        path that begins with '-' would be read as a flag of its own."""
        dtype = [] if self.state_dtype == "fp32" else ["--state-dtype", self.state_dtype]
        return [f"--csv={csv_path}", f"--out-dir={out}"] + dtype


_DECODE = "kvb sweep --config experiments/decode_latency.toml"
FIGURES = (
    Figure("decode_latency", "decode_latency.csv", _DECODE),
    Figure("decode_efficiency", "decode_latency.csv", _DECODE),
    Figure("decode_bytes", "decode_latency.csv", _DECODE),
    Figure("spec_verify", "spec_verify.csv", "kvb sweep --config experiments/spec_verify.toml"),
    Figure("capacity", "capacity.csv", "kvb capacity --config experiments/capacity.toml"),
    Figure("short_context", "short_context.csv", "kvb sweep --config experiments/short_context.toml"),
    Figure("buffer_form", "buffer_form.csv", "kvb sweep --config experiments/buffer_form.toml"),
    Figure("accuracy", "accuracy.csv", "kvb sweep --config experiments/accuracy.toml"),
)

_DECODE_DTYPES = "kvb sweep --config experiments/decode_state_dtype.toml"
STATE_DTYPE_FIGURES = (
    Figure("decode_latency", "decode_state_dtype.csv", _DECODE_DTYPES, "bf16"),
    Figure("decode_efficiency", "decode_state_dtype.csv", _DECODE_DTYPES, "bf16"),
    Figure("spec_verify", "spec_verify_state_dtype.csv", "kvb sweep --config experiments/spec_verify_state_dtype.toml",
           "bf16"),
)

# What --results-dir may be, in the words of its errors.
RESULTS_DIR_ALLOWED = "the folder of the result CSVs, such as results"

# Modules in plots/ that are not figure scripts.
HELPER_MODULES = frozenset({"style", "anchors", "decode_data", "make_all", "result_csv", "stop_at_start"})


def main(argv=None) -> int:
    """Command line entry: validate every CSV present, then draw every registered figure whose CSV exists; returns
    the exit status."""
    p = style.OneLineParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--results-dir", default=str(REPO_ROOT / "results"), help="folder of the CSVs (default results)")
    p.add_argument("--out-dir", default=str(REPO_ROOT / "results" / "figures"),
                   help="where the figures go (default results/figures)")
    args = p.parse_args(argv)
    style.refuse_empty("--results-dir", args.results_dir, RESULTS_DIR_ALLOWED)
    style.refuse_empty("--out-dir", args.out_dir, style.OUT_DIR_ALLOWED)
    if argv is None:
        style.stop_between_steps()
    try:
        return _make(Path(args.results_dir), Path(args.out_dir))
    except style.Interrupted as e:
        print(f"stopped by {e}", file=sys.stderr)
        return e.code


def _make(results: Path, out: Path) -> int:
    # Paths too long for the file system first: looking them up would end in a traceback.
    style.check_path_fits("--results-dir", results)
    # The figure scripts' check of --out-dir, once here rather than once for each figure.
    style.check_out_dir(out, max((style.temporary_name(f.name) for f in FIGURES + STATE_DTYPE_FIGURES), key=len))
    for fig in FIGURES + STATE_DTYPE_FIGURES:
        problem = result_csv.path_too_long(results / fig.csv)
        if problem:
            style.fail(f"{result_csv.shown_value(str(results / fig.csv))}: {problem}")
    # A folder on the way to the CSVs that this user cannot search (looking a CSV up there would raise): every
    # figure's CSV lies directly in the results folder, so looking one of them up tells for all.
    style.refuse_unsearchable("--results-dir", results, results / FIGURES[0].csv, RESULTS_DIR_ALLOWED)
    if not results.is_dir():
        style.fail(f"--results-dir {results}: {'not a folder' if results.exists() else 'no such folder'} (allowed: "
                   f"{RESULTS_DIR_ALLOWED})")

    # Every CSV first, so that a bad one stops the run before any figure changes.
    todo, skipped = [], []
    for fig in FIGURES + STATE_DTYPE_FIGURES:
        csv_path = results / fig.csv
        if not csv_path.exists():
            skipped.append(f"{fig.name} ({csv_path} not found; {fig.made_by} writes it)")
            continue
        module = importlib.import_module(fig.script)
        try:
            result_csv.read(csv_path, module.KIND)
        except result_csv.CsvError as e:
            style.fail(str(e))
        todo.append((fig, module, csv_path))
    # A folder that cannot be made or written (as in /proc), or a figure's file that is a folder, is refused once
    # before any figure is drawn, instead of by every script in turn.
    if todo:
        style.probe_out_dir(out, [out / f"{fig.name}.{ext}" for fig, _, _ in todo for ext in ("png", "pdf")],
                            "the figures")

    made, failed = [], []
    stopped = None
    for fig, module, csv_path in todo:
        if style.pending_interrupt():
            stopped = style.pending_interrupt()
            break
        try:
            with style.errors_named(fig.name):  # the script's error lines name its figure, as the warnings do
                code = module.main(fig.args(csv_path, out))
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        except style.Interrupted as e:
            code = e.code
        except Exception as e:  # a script's own error: reported, the other figures still drawn
            print(result_csv.one_line(f"{fig.name}: {type(e).__name__}: {e}"), file=sys.stderr)
            code = 1
        if code in (130, 143):
            stopped = code
            break
        (made if code == 0 else failed).append(fig.name)
    stopped = stopped or style.pending_interrupt()

    style.say(f"made {len(made)} figure(s): {', '.join(made) or 'none'}")
    if skipped:
        style.say(f"skipped {len(skipped)}: " + "; ".join(skipped))
    if failed:
        print(f"failed {len(failed)}: {', '.join(failed)}", file=sys.stderr)
    if stopped:
        not_made = [fig.name for fig, _, _ in todo if fig.name not in made and fig.name not in failed]
        print(f"stopped by {'SIGINT' if stopped == 130 else 'SIGTERM'}; not made (left as they were): "
              f"{', '.join(not_made) or 'none'}", file=sys.stderr)
    # Lines stdout could not take (the figures' "wrote" lines or the summary) fail the run as a write failure, once;
    # the figures written are counted as made all the same.
    lost = style.stdout_failed()
    return stopped or (1 if failed or lost else 0)


if __name__ == "__main__":
    sys.exit(main())
