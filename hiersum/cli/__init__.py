"""The hiersum commands: the ``hiersum`` entry point (:mod:`hiersum.cli.main`) and one thin entry module per
action (Hydra or argparse, help, exit statuses); each action's logic is in :mod:`hiersum.commands`."""
