"""Figures, one module per stage (``ceiling``, ``audit``, ``loss``, ``diagnostics``, ``access``), as the
statistics frames (:mod:`trustmass.report.frames`) and the table layouts (:mod:`trustmass.report.layouts`)."""
