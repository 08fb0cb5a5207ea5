"""The memory eval (``bin/eval``); see ``evals/runner.py``."""
