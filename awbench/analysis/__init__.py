"""What the data and finished runs say: statistics, leaderboards, comparisons, reports. Nothing in the run
stages imports this package; it only reads what runs stored.

    options      defaults the CLI's options name (kept free of numpy, so startup stays light)
    listing      finding runs on disk; every run with its state, for `awbench ls`
    stats        trajectory bootstrap, Krippendorff's alpha, length bias
    runs         RunData: one run's records loaded once per command, with its intervals
    leaderboard  runs ranked in comparability groups, with intervals
    compare      two runs sample by sample: paired differences, agreement
    planning     the smallest difference an evaluation detects, and the K and J a difference needs
    judge_effects how much the judge decides: offsets, rank agreement, possible self-preference
    growth       scores by turn index and context length along trajectories
    sample_view  one sample's story (history, action, prediction, ground truth, verdicts); the worst samples
    run_views    what `awbench show --format json` prints, one model per view
    data_info    a dataset's counts, turns and context sizes (`awbench data info`)
    charts       charts of 0..100 scores, drawn once: inline SVG for the report, PNG files on request
    report       the self-contained HTML report
    tables       runs as pandas DataFrames for notebooks: per-sample results, the leaderboard, a comparison
    turing       a judge's Turing-test accuracy, position bias, and the model's fool rate
"""
