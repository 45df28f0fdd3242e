"""Running benchmarks: from a run's configuration to its rows.

The parent (``orchestrate``) plans the work and starts one ``worker`` process
per model; a worker loads the model (``suite``), places it (``placement``),
times it (``measure``), reads the compilers' counters (``probes``), checks
accuracy (``accuracy``) or first calls (``coldstart``) and turns what it saw
into rows (``rows``), which the results store keeps. Nothing here renders a
report or reads a command line: ``benchmarks.cli`` builds the ``RunConfig``
(``config``) this package runs.
"""
