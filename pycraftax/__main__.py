"""`python -m pycraftax`: the `pycraftax` command (what `pycraftax train --gpus N` runs on every rank)."""

import sys

from pycraftax.cli import main

sys.exit(main())
