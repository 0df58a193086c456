import sys

from handoffs_runtime.cli.main import main

sys.exit(main())
