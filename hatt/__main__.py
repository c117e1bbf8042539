"""``python -m hatt``: the ``hatt`` command."""

import sys

from hatt.cli import main

sys.exit(main())
