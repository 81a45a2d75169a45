"""``python -m humanwire.server.runtime.settings --reference | --write FILE``: the configuration
reference, printed or written into the page between its markers."""

import sys

from .reference import main

sys.exit(main(sys.argv[1:]))
