"""``python -m hatt.cli``: the ``hatt`` command."""

import sys

from hatt.cli import main

sys.exit(main())
