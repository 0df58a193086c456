"""``python -m handoffs_runtime``: the ``handoffs`` command."""

import sys

from handoffs_runtime.cli.main import main

sys.exit(main())
