"""The hiersum commands (thin Hydra / argparse entry points).

Importing the package registers the ``ranker`` paragraph selection (``data.selection=ranker``), which the
data stage reaches only through :data:`hiersum.data.selection.SCORERS`.
"""

import hiersum.checkpoints.ranker  # noqa: F401  (registers SCORERS["ranker"])
