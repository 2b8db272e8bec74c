"""`python -m awbench`: the `awbench` command line."""

from awbench.cli import main

if __name__ == "__main__":  # importing the module (pkgutil walks the package) runs nothing
    main()
