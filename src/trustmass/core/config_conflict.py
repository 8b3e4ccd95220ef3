"""The exception a job raises when the configuration itself is at fault (no data it read is).

Every ``raise ConfigConflict(fields=(...), ...)`` in the library is a job-time check that depends on
the config alone (or on what the config declares), so it must have a start-up twin: a check the
workflow runs when it starts, refusing the same config naming the same fields.
``tests/unit/test_config_twins.py`` finds these raises (ast) and checks that each field set has one.
"""

from __future__ import annotations

__all__ = ["ConfigConflict"]


class ConfigConflict(ValueError):
    """A config the job cannot run with; ``fields`` are the config keys (dotted paths) at fault."""

    def __init__(self, message: str, *, fields: tuple[str, ...]):
        if not fields:
            raise TypeError("ConfigConflict needs the config fields at fault (fields=('deploy.methods', ...))")
        self.fields = tuple(fields)
        super().__init__(message)
