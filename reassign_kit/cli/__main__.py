"""``python -m reassign_kit.cli``: the same as the ``reassign-kit`` command."""

import sys

from . import main

sys.exit(main())
