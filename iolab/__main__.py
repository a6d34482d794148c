"""``python -m iolab ...``: the same as the ``iolab`` command."""

from iolab.cli import main

if __name__ == "__main__":
    main()
