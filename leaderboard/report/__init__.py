"""The leaderboard's reports: summaries, tables, seeds, intervals and figures of results CSVs.

Each module is a command, ``python -m leaderboard.report.NAME --help``; the harness
(``leaderboard.eval``, ``leaderboard.harness``) and the agents stay at the top of
``leaderboard``, where a submitter looks.
"""
