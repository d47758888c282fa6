"""``python -m memloci`` (layer: interfaces): the ``memloci`` command, for an
environment whose ``bin`` folder is not on ``PATH``."""

from memloci.interfaces.cli import main

if __name__ == "__main__":
    main()
