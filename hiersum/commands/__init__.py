"""Each action's logic, one module per action: a plain function on the action's typed config (the
dataclasses of :mod:`hiersum.config`), which the tests call in process and :mod:`hiersum.cli` calls from
the ``hiersum <action>`` command line. Importing the package registers the ``ranker`` paragraph selection
(``data.selection=ranker``), which the data stage reaches only through
:data:`hiersum.data.selection.SCORERS`.
"""

import hiersum.checkpoints.ranker  # noqa: F401  (registers SCORERS["ranker"])
