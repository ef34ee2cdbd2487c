"""pycraftax's own fuzz suite of the public API: input generators (inputs.py), shared with the
Hypothesis tests in tests/, and the runner of `nox -s fuzz` (run.py)."""
