"""The Hydra configs, installed as the package ``hiersum.conf`` (see pyproject.toml and hiersum/cli/common.py).

A regular package (not a namespace one) so that ``importlib.resources.files("hiersum.conf")`` also
finds this folder through setuptools' editable-install finder.
"""
