"""Entry point of the ``citemark`` command (also ``python -m citemark``)."""

from __future__ import annotations

import sys

from citemark._pipelines.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
