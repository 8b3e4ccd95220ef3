# Helpers for the certification stage (workflow/rules/certify.smk).  Functions and constants only.

from trustmass.report.claims_data import claim as _claim

CERT = "results/certify"
CERT_CONFIG = ("seed", "budgets/enumerated", "certification", "statistics/primary_docs")


def certify_shard_outputs(wildcards=None):
    n = int(config["certification"]["n_shards"])
    return [f"{CERT}/shards/{i:03d}.parquet" for i in range(n)]


def paper_claim_texts(*ids):
    """The paper's claim texts (Markdown-escaped) for a table's caption."""
    escape = str.maketrans({"*": "\\*", "|": "\\|"})
    return [f"claim {i}: {_claim(i).text.translate(escape)}" for i in ids]
