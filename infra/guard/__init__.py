"""Budget kill-switch function source, deployed by infra/components/killswitch.py (entry: main.py)."""
