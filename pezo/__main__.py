"""``python -m pezo`` runs the ``pezo`` command line."""

import sys

from pezo.cli.main import main

sys.exit(main())
