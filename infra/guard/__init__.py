"""Budget kill-switch function source, deployed standalone by infra/killswitch.py (entry module: main.py)."""
