"""Where a sample comes in: the benchmark's files read, checked and selected.

dataset     load_samples: local JSONL or the Hugging Face Hub to validated, keyed, hashed Samples
hub         a Hub dataset's splits read with the record schema, and what to do when the Hub is out of reach
json_lines  the one JSONL line reader (the data's and the reference script's files): invalid UTF-8 or JSON,
            repeated keys, lone surrogates and deep nesting named by file, line and field
selection   the samples to evaluate: by domain, by id, a limit per domain, a stratified random sample
problems    DataProblem: bad input named by file, line and field
"""
