"""``python -m alprbf.cli``: the command line (as ``python -m alprbf``)."""

from . import main

main()
