"""Statistics frames per stage (pure functions: records in, small tidy frames out) and the claim
values each stage regenerates, in the one headline schema.  Each statistics rule of the catalog
(:data:`trustmass.report.catalog.STATISTICS`) calls one function of the one shape
``statistics(inputs, config) -> Frames`` here (:mod:`trustmass.report.statistics`)."""
