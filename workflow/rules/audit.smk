# Stage 6: the selector audit (spec §5, App C).  One job per capture shard of the headline
# population scores every rule whose contract declares an audit role
# (trustmass.core.selectors.registry.audit_rules()) on every (layer, head, sampled row, budget), per
# query and cache-faithful, joined row by row to that shard's ceiling records.  Its statistics, the
# audit table and Figure 3 are the reporting layer's (report.smk).
#
#   results/audit/{model}/{corpus}/{doc}.parquet          trustmass.audit.records
#   results/audit/{model}/{corpus}/{doc}.swaps.parquet    trustmass.audit.swaps (boundary swaps, es)
#   results/audit/{model}/{corpus}/{doc}.projection.parquet   trustmass.audit.projection (strict vs token-fill)
#
# Needs from common.smk: library_code, params_from_config, prov; from capture_common.smk:
# capture_shard, ceiling_records.

AUDIT = "results/audit/{model}/{corpus}/{doc}.parquet"
SWAP_ROWS = "results/audit/{model}/{corpus}/{doc}.swaps.parquet"
PROJECTION_ROWS = "results/audit/{model}/{corpus}/{doc}.projection.parquet"


rule audit:
    """Audit records of one captured document: every audited rule's es per query and cache-faithful."""
    input:
        shard=capture_shard("{model}", "{corpus}", "{doc}"),
        records=ceiling_records("{model}", "{corpus}", "{doc}"),
        code=library_code("trustmass.audit.records", "trustmass.plumbing.rule_io"),
    output:
        audit=AUDIT,
        prov=prov(AUDIT),
    params:
        config=params_from_config("budgets", "enumeration", "labels", "capture/windows"),
    wildcard_constraints:
        doc="[0-9]{4}",
    log:
        "logs/audit/{model}/{corpus}/{doc}.log",
    threads: 2
    resources:
        mem_mb=4000,
        runtime=60,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/audit.py"


rule row_diagnostics:
    """On every sampled row of one captured document, es as the outcome: boundary swaps between selector
    pairs and their random controls (related-methods A.2), and the block rules' strict block TopK against
    its token-fill (A.4 Stage III)."""
    input:
        shard=capture_shard("{model}", "{corpus}", "{doc}"),
        code=library_code("trustmass.audit.swaps", "trustmass.audit.projection", "trustmass.plumbing.rule_io"),
    output:
        swaps=SWAP_ROWS,
        projection=PROJECTION_ROWS,
        prov=[prov(SWAP_ROWS), prov(PROJECTION_ROWS)],
    params:
        config=params_from_config("seed", "diagnostics/swaps", "diagnostics/projection", "capture/windows"),
    wildcard_constraints:
        doc="[0-9]{4}",
    log:
        "logs/audit/row_diagnostics/{model}/{corpus}/{doc}.log",
    threads: 1
    resources:
        mem_mb=3000,
        runtime=30,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/row_diagnostics.py"
