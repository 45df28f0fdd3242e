"""Results: stored rows and everything computed or drawn from them.

``schema`` names the columns and migrates old files; ``store`` writes and
reads them; ``stats`` and ``pairing`` turn samples into ratios and intervals;
``compare``, ``merge``, ``history`` and ``gate`` judge and combine runs;
``report``, ``plots`` and ``dashboard`` render them. Nothing here runs a
model or imports torch: a report can be rebuilt from the files alone.
"""
