"""Make every figure whose CSV exists: runs each registered figure script on its CSV, lists the ones skipped.

Each entry of FIGURES names a script plots/SCRIPT.py (writing OUT_DIR/SCRIPT.png and .pdf), the CSV under
results/ it reads and the command that writes that CSV. A figure whose CSV is not there is skipped, and the skip line
names the command that makes it. A new figure is one new script plus one entry here; tests/plots checks that every
figure script in plots/ is registered.

Usage: python3 plots/make_all.py [--results-dir results] [--out-dir results/figures]
Exit status: 0 when every figure whose CSV exists was made (skipped ones do not count), 1 when a script failed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

PLOTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = PLOTS_DIR.parent


@dataclass(frozen=True)
class Figure:
    """A figure script (plots/SCRIPT.py), the CSV file name (under the results folder) it reads, and the kvb command
    that writes that CSV."""

    script: str
    csv: str
    made_by: str


_DECODE = "kvb sweep --config experiments/decode_latency.toml"
FIGURES = (
    Figure("decode_latency", "decode_latency.csv", _DECODE),
    Figure("decode_efficiency", "decode_latency.csv", _DECODE),
    Figure("decode_bytes", "decode_latency.csv", _DECODE),
    Figure("spec_verify", "spec_verify.csv", "kvb sweep --config experiments/spec_verify.toml"),
    Figure("capacity", "capacity.csv", "kvb capacity --config experiments/capacity.toml"),
    Figure("short_context", "short_context.csv", "kvb sweep --config experiments/short_context.toml"),
    Figure("buffer_form", "buffer_form.csv", "kvb sweep --config experiments/buffer_form.toml"),
)

# Modules in plots/ that are not figure scripts.
HELPER_MODULES = frozenset({"style", "anchors", "decode_data", "make_all"})


def main(argv=None) -> int:
    """Command line entry: run every registered figure whose CSV exists; returns the exit status."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--results-dir", default=str(REPO_ROOT / "results"), help="folder of the CSVs (default results)")
    p.add_argument("--out-dir", default=str(REPO_ROOT / "results" / "figures"),
                   help="where the figures go (default results/figures)")
    args = p.parse_args(argv)

    made, skipped, failed = [], [], []
    for fig in FIGURES:
        csv_path = Path(args.results_dir) / fig.csv
        if not csv_path.is_file():
            skipped.append(f"{fig.script} ({csv_path} not found; {fig.made_by} writes it)")
            continue
        cmd = [sys.executable, str(PLOTS_DIR / f"{fig.script}.py"), "--csv", str(csv_path), "--out-dir", args.out_dir]
        result = subprocess.run(cmd)
        (made if result.returncode == 0 else failed).append(fig.script)

    print(f"made {len(made)} figure(s): {', '.join(made) or 'none'}")
    if skipped:
        print(f"skipped {len(skipped)}: " + "; ".join(skipped))
    if failed:
        print(f"failed {len(failed)}: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
