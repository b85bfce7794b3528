"""``python -m perfkit.cli``, as the ``perfkit`` script runs it (the subprocess tests use this form)."""
import sys

from perfkit.cli import main

sys.exit(main())
