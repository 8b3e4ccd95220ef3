"""Command-line tools that are not workflow stages (``python -m trustmass.cli.plan``)."""
