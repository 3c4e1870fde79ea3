"""`python -m app.cli`: the command line, as `feedback-lab`."""

import sys

from app.cli import main

sys.exit(main())
