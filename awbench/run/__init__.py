"""A run: generation and judging pipelined, their records stored by sample key, and scored.

pipeline     run, infer, judge, score, estimate: the Python API behind the run commands, and their flows
stages       inference and judging as concurrent stages fed sample by sample
store        the run directory: run.json (read once per command), predictions, one evaluation per judge, the lock
migrate      older run directories brought to the current layout by a command that writes to them
evaluations  which judge scores a run, and its scores.json
scoring      verdicts to per-domain 0..100 scores (macro Overall)
variance     the judge's, the generations' and the items' shares of a score's standard error
failures     why samples failed or were not scored, grouped
agreement    rank correlation between two judges of one run
reparse      stored verdicts parsed again by the current parser
rewards      per-sample rewards as the report trains with: 0.9 x rubric + 0.1 x rule
turing       the double-blind Turing test of a run's predictions, its own evaluation in turing/<judge id>/
pairwise     runs compared by a pairwise judge, the answers kept under OUTPUT/pairwise/
"""
