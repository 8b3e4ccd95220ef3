"""Shared math of the study, no I/O and no torch: the forced-weight operator, exact enumeration,
the simplex projection, statistics, and every kept-set selector behind one contract."""
