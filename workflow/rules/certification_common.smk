# Helpers for the certification stage (workflow/rules/certification.smk).  Functions and constants only.

CERT = "results/certify"
CERT_CONFIG = ("seed", "budgets/enumerated", "certification", "statistics/primary_docs", "study/headline", "study/models", "study/corpora")


def certify_shard_outputs(wildcards=None):
    n = int(config["certification"]["n_shards"])
    return [f"{CERT}/shards/{i:03d}.parquet" for i in range(n)]
