"""``python -m benchmarks.dashboard ROOT -o SITE``: the same as ``runner.py dashboard``."""
import sys

from benchmarks.dashboard import main

sys.exit(main())
