"""The paper's claims (``data/claims.yaml``), the verdict for each kind of claim, and the claims report."""
