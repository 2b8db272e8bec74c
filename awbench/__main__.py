"""`python -m awbench`: the `awbench` command line."""

from awbench.cli import main

main()
