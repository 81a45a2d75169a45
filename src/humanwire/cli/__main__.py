"""``python -m humanwire.cli``: the ``humanwire`` command."""

import sys

from . import main

sys.exit(main())
