# Stage 6: the selector audit (spec §5, App C).  One job per capture shard of the headline
# population scores every rule whose contract declares an audit role
# (trustmass.core.selectors.registry.audit_rules()) on every (layer, head, sampled row, budget), per
# query and cache-faithful, joined row by row to that shard's ceiling records.  Its statistics, the
# audit table and Figure 3 are the reporting layer's (report.smk).
#
#   layout.AUDIT             results/audit/{model}/{corpus}/{doc}.parquet     trustmass.audit.records
#   layout.SWAP_ROWS         ...{doc}.swaps.parquet        trustmass.audit.swaps (boundary swaps, es)
#   layout.PROJECTION_ROWS   ...{doc}.projection.parquet   trustmass.audit.projection (strict vs token-fill)


rule audit:
    """Audit records of one captured document: every audited rule's es per query and cache-faithful."""
    input:
        shard=layout.CAPTURE_SHARD,
        records=layout.CEILING,
        code=library_code("trustmass.audit.records", "trustmass.plumbing.rule_io"),
    output:
        audit=layout.AUDIT,
        prov=prov(layout.AUDIT),
    params:
        config=params_of_model("budgets", "enumeration", "labels", "capture/windows"),
    wildcard_constraints:
        doc="[0-9]{4}",
    log:
        layout.log("audit"),
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
        shard=layout.CAPTURE_SHARD,
        code=library_code("trustmass.audit.swaps", "trustmass.audit.projection", "trustmass.plumbing.rule_io"),
    output:
        swaps=layout.SWAP_ROWS,
        projection=layout.PROJECTION_ROWS,
        prov=[prov(layout.SWAP_ROWS), prov(layout.PROJECTION_ROWS)],
    params:
        config=params_of_model("seed", "diagnostics/swaps", "diagnostics/projection", "capture/windows"),
    wildcard_constraints:
        doc="[0-9]{4}",
    log:
        layout.log("row_diagnostics"),
    threads: 1
    resources:
        mem_mb=3000,
        runtime=30,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/row_diagnostics.py"
