"""`python -m emukern.cli ...` is `emukern ...`."""
import sys

from emukern.cli import main

sys.exit(main())
