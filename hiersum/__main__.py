"""``python -m hiersum <action> ...``: the ``hiersum`` command (:mod:`hiersum.cli.main`)."""

from hiersum.cli.main import main

main()
