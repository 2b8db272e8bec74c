"""Files other tools read or write.

reference    the reference eval.py's files: import its outputs as runs, export runs in its format
hub_results  the Hugging Face Hub's `.eval_results/` file for a model repository
inspect_task AgentWorldBench as the inspect_ai task awbench/agentworldbench (the `inspect` extra)
inspect_log  an inspect_ai log of that task as a run (`awbench import LOG`)
"""
