#!/usr/bin/env python
"""Entry point of the benchmark harness: ``python runner.py --help``."""
import sys

from benchmarks.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
