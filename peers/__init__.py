"""The peer runner: other projects' GDN kernels measured as kvb sweep variants, in this Python process, with the
protocol of kvb's own points (docs/MEASURING.md, "Peers"). kvb starts `python3 peers/run_peer.py` once per point."""
