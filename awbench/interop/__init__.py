"""Files other tools read or write.

reference    the reference eval.py's files: import its outputs as runs, export runs in its format
hub_results  the Hugging Face Hub's `.eval_results/` file for a model repository
"""
