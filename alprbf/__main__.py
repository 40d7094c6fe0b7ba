"""``python -m alprbf``: the command line."""

from .cli import main

main()
