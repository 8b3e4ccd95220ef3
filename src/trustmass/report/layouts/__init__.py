"""Table layouts, one module per stage (``ceiling``, ``certification``, ``audit``, ``loss``, ``tasks``, ``deploy``,
``diagnostics``, ``access``), each with its :data:`LAYOUTS` (layout name -> :class:`~trustmass.report.tables.TableLayout`)
and the one ``write``; a catalog entry names one as ``module:layout``."""
