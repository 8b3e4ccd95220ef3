"""Statistics frames per stage (pure functions: records in, small tidy frames out) and the claim
values each stage regenerates, in the one headline schema."""
