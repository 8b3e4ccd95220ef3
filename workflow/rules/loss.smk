# Stage: the held-out loss under the restricted operator (paper spec §6, App B.6, App E).  A dense
# prefix, then continuation rows whose head outputs are the kept-set means m_A of the selector under
# test; CE per configuration on held-out documents disjoint from the capture (map) documents.
#
#   layout.HELDOUT       resources/heldout/{model}/{corpus}.safetensors: the held-out chunking (first_doc + n_docs chunks)
#   layout.LOSS_MAP      results/loss/{model}/map.parquet: the map, median dropped mass at the map budget per cell
#   layout.LOSS_TOKENS   results/loss/{model}/{corpus}/{doc}.parquet: per-token NLL of every configuration
#   layout.CELLS         ...{doc}.cells.parquet: per-cell dropped mass, es, swaps
#   layout.CURVATURE     ...{doc}.curvature.parquet: the second-order prediction per cell set
#   layout.DIAGNOSTICS   ...{doc}.diagnostics.parquet: boundary swaps and the margin split's rules (CE, KL)


rule tokenize_heldout:
    """The held-out documents: the corpus cut like the capture documents, first_doc + n_docs chunks,
    shifted (lead_tokens) so that chunk first_doc starts after the capture documents' text."""
    input:
        model=layout.MODEL_CONFIG,
        corpus=layout.CORPUS_TEXT,
        capture=layout.DOCUMENTS_MANIFEST,
        code=library_code("trustmass.sources.documents", "trustmass.plumbing.rule_io"),
    output:
        ids=layout.HELDOUT,
        manifest=layout.HELDOUT_MANIFEST,
        prov=[prov(layout.HELDOUT), prov(layout.HELDOUT_MANIFEST)],
    params:
        documents=lambda wc: STUDY.of(wc.model).heldout_settings(wc.model),
        first_doc=lambda wc: STUDY.of(wc.model).heldout_first_doc(wc.model),
        seed=lambda wc: STUDY.of(wc.model).shuffle_seed(wc.model),  # the shuffled-text control draws from it
    log:
        layout.log("tokenize_heldout"),
    threads: 1
    resources:
        mem_mb=4000,
        runtime=20,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/tokenize_documents.py"


rule loss_map:
    """The map the switch uses: median least dropped mass at the map budget per (layer, query head),
    from the capture shards of the map documents (Figure 2's primary slice)."""
    input:
        shards=lambda wc: STUDY.of(wc.model).map_shards(wc.model),
        code=library_code("trustmass.loss.cell_map", "trustmass.plumbing.rule_io"),
    output:
        map=layout.LOSS_MAP,
        prov=prov(layout.LOSS_MAP),
    params:
        config=params_of_model("statistics/map_budget", "statistics/flat_mass"),
    log:
        layout.log("loss_map"),
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/loss_map.py"


rule loss_document:
    """Every configuration on one held-out document: dense, keep-all, top-mass, all-cell, flat switch,
    random cells, each deployed rule alone and with the flat switch."""
    input:
        model=layout.MODEL_CONFIG,
        source=layout.MODEL_SOURCE,
        heldout=layout.HELDOUT,
        capture_documents=layout.DOCUMENTS_MANIFEST,
        map=layout.LOSS_MAP,
        probe=lambda wc: STUDY.of(wc.model).probe_outputs(wc.model),
        code=library_code("trustmass.loss.document", "trustmass.loss.job", "trustmass.loss.probe", "trustmass.plumbing.rule_io"),
    output:
        tokens=layout.LOSS_TOKENS,
        cells=layout.CELLS,
        prov=[prov(layout.LOSS_TOKENS), prov(layout.CELLS)],
    params:
        config=params_of_model("seed", "loss", "capture/device", "budgets", "enumeration", "balancing"),
    wildcard_constraints:
        doc="[0-9]{4}",
    log:
        layout.log("loss_document"),
    threads: config["loss"]["threads"]
    resources:
        mem_mb=6000,
        runtime=60,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/loss_document.py"


rule loss_curvature:
    """Curvature (App E): the gradient and Hessian-vector products at every head's o_proj input at
    the top-mass point of one held-out document; the second-order prediction of the flat switch,
    the random-cell controls and all-cell balancing, and the frozen-set replay of each."""
    input:
        model=layout.MODEL_CONFIG,
        source=layout.MODEL_SOURCE,
        heldout=layout.HELDOUT,
        capture_documents=layout.DOCUMENTS_MANIFEST,
        map=layout.LOSS_MAP,
        code=library_code("trustmass.loss.curvature", "trustmass.loss.job", "trustmass.plumbing.rule_io"),
    output:
        curvature=layout.CURVATURE,
        prov=prov(layout.CURVATURE),
    params:
        config=params_of_model("seed", "loss", "capture/device", "budgets", "enumeration", "balancing"),
    wildcard_constraints:
        doc="[0-9]{4}",
    log:
        layout.log("loss_curvature"),
    threads: config["loss"]["threads"]
    resources:
        mem_mb=8000,
        runtime=60,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/loss_curvature.py"


rule allocation_panel:
    """The allocation panel (App B.6): map-proportional, mass-greedy and pyramid budgets against a
    uniform one at matched total, pooled es under balancing and top-mass, cell-cluster intervals."""
    input:
        shards=lambda wc: STUDY.of(wc.model).allocation_shards(wc.model),
        code=library_code("trustmass.loss.allocation", "trustmass.plumbing.rule_io"),
    output:
        panel=layout.ALLOCATION,
        prov=prov(layout.ALLOCATION),
    params:
        config=params_of_model("seed", "loss/allocation", "statistics/bootstrap", "statistics/map_budget"),
    log:
        layout.log("allocation_panel"),
    threads: 1
    resources:
        mem_mb=3000,
        runtime=30,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/allocation_panel.py"


rule probe_train:
    """The rank-16 probe (App E): a zero-initialised low-rank correction of the query/key scores,
    trained per layer to reproduce the balancing swaps on capture documents (disjoint from the
    held-out ones); its swap recall on the other corpora's capture documents at every mixing weight."""
    input:
        train=lambda wc: STUDY.of(wc.model).probe_shards(wc.model)[0],
        check=lambda wc: STUDY.of(wc.model).probe_shards(wc.model)[1],
        code=library_code("trustmass.loss.probe", "trustmass.plumbing.rule_io"),
    output:
        params=layout.PROBE,
        recall=layout.PROBE_RECALL,
        prov=[prov(layout.PROBE), prov(layout.PROBE_RECALL)],
    params:
        config=params_of_model("seed", "loss/budget", "loss/probe"),
    log:
        layout.log("probe_train"),
    threads: config["loss"]["threads"]
    resources:
        mem_mb=4000,
        runtime=60,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/probe_train.py"


rule loss_diagnostics:
    """The fixed-contract diagnostics through the restricted forward on one held-out document: boundary
    swaps and random controls between selector pairs, and the margin split's host and value-aware rules;
    per token the NLL and the KL divergence from the dense model's next-token distribution."""
    input:
        model=layout.MODEL_CONFIG,
        source=layout.MODEL_SOURCE,
        heldout=layout.HELDOUT,
        capture_documents=layout.DOCUMENTS_MANIFEST,
        map=layout.LOSS_MAP,
        code=library_code("trustmass.loss.diagnostics", "trustmass.loss.job", "trustmass.plumbing.rule_io"),
    output:
        tokens=layout.DIAGNOSTICS,
        prov=prov(layout.DIAGNOSTICS),
    params:
        config=params_of_model("seed", "loss", "diagnostics", "capture/device", "budgets", "enumeration", "balancing"),
    wildcard_constraints:
        doc="[0-9]{4}",
    log:
        layout.log("loss_diagnostics"),
    threads: config["loss"]["threads"]
    resources:
        mem_mb=6000,
        runtime=60,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/loss_diagnostics.py"
