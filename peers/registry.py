"""The peer variants the runner knows, by kvb's variant name, and peers added from other files (a test's stand-in).

Each module in MODULES defines PEERS = {variant: class}; a file given with --peer-module adds its own PEERS. The
decode kind of kvb lists the same variants (harness/kinds/peer_variants.cpp); a test checks both lists agree.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from typing import Dict, Iterable

# Modules of this folder that define peers, in the order `list` prints them.
MODULES = ("peers.fla_decode", "peers.flashinfer_decode", "peers.replayssm")


def load_peers(extra_files: Iterable[str] = ()) -> Dict[str, type]:
    """variant -> peer class, from MODULES and then `extra_files` (Python files defining PEERS). Raises ValueError
    naming a file that cannot be loaded or defines no PEERS, or a variant defined twice."""
    peers: Dict[str, type] = {}

    def add(source: str, table) -> None:
        if not isinstance(table, dict):
            raise ValueError(f"{source}: defines no PEERS dictionary")
        for variant, cls in table.items():
            if variant in peers:
                raise ValueError(f"{source}: variant {variant} is defined twice")
            peers[variant] = cls

    for name in MODULES:
        add(name, getattr(importlib.import_module(name), "PEERS", None))
    for path in extra_files:
        if not os.path.isfile(path):
            raise ValueError(f"--peer-module {path}: no such file")
        spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        add(f"--peer-module {path}", getattr(module, "PEERS", None))
    return peers
