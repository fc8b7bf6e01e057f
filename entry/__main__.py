"""`python -m rooflens`: the `rooflens` command line.

The namespace `rooflens` is assembled from several folders (pyproject `package-dir`); this
folder is the portion that holds only its `__main__`, so the namespace needs no `__init__`.
"""

from rooflens.server.cli import main

raise SystemExit(main())
