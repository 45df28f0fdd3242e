"""``python -m benchmarks.results.dashboard ROOT -o SITE``: the same as ``runner.py dashboard``."""
import sys

from benchmarks.results.dashboard import main

sys.exit(main())
