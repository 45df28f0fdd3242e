import sys

from benchmarks.nightly.cli import main

sys.exit(main())
