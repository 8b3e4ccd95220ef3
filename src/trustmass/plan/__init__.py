"""The study plan: every path pattern once (:mod:`~trustmass.plan.layout`) and every target list as a pure
function of the configuration (:class:`~trustmass.plan.study.Study`).

The workflow's ``.smk`` files are a thin shell over this package: they name rules, resources and scripts,
and take every path and every list of files from here.
"""

from trustmass.plan import layout
from trustmass.plan.headline import Headline
from trustmass.plan.study import Document, PlanError, Study

__all__ = ["Document", "Headline", "PlanError", "Study", "layout"]
