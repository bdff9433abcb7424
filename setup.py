"""Only the package list; everything else is in pyproject.toml.

pyproject's ``packages.find`` cannot add a package that lives outside hiersum/: ``hiersum.conf`` is
the top-level ``conf/`` folder (``[tool.setuptools.package-dir]``), shipped with its YAML files.
"""

from setuptools import find_namespace_packages, setup

setup(packages=[*find_namespace_packages(include=["hiersum*"]), "hiersum.conf"])
