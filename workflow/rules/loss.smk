# Stage: the held-out loss under the restricted operator (paper spec §6, App B.6, App E).  A dense
# prefix, then continuation rows whose head outputs are the kept-set means m_A of the selector under
# test; CE per configuration on held-out documents disjoint from the capture (map) documents.
#
#   resources/heldout/{model}/{corpus}.safetensors   the held-out chunking (first_doc + n_docs chunks)
#   results/loss/{model}/map.parquet                 the map: median dropped mass at s = 8 per cell
#   results/loss/{model}/{corpus}/{doc}.parquet      per-token NLL of every configuration
#   results/loss/{model}/{corpus}/{doc}.cells.parquet   per-cell dropped mass, es, swaps
#   results/loss/{model}/{corpus}/{doc}.curvature.parquet   the second-order prediction per cell set
#   results/loss/{model}/{corpus}/{doc}.diagnostics.parquet   boundary swaps and the margin split's rules (CE, KL)
#
# Needs from common.smk: library_code, params_from_config, prov; sources_common.smk:
# documents_path, documents_for_model, model_source_record; capture_common.smk: capture_shard,
# doc_ids; loss_common.smk: the paths and document lists.


rule tokenize_heldout:
    """The held-out documents: the corpus cut like the capture documents, first_doc + n_docs chunks,
    shifted (lead_tokens) so that chunk first_doc starts after the capture documents' text."""
    input:
        model="resources/models/{model}/config.json",
        corpus="resources/corpora/{corpus}/corpus.txt",
        capture=lambda wc: capture_manifest(wc.model, wc.corpus),
        code=library_code("trustmass.sources.documents", "trustmass.plumbing.rule_io"),
    output:
        ids=heldout_path("{model}", "{corpus}"),
        manifest="resources/heldout/{model}/{corpus}.json",
        prov=prov(heldout_path("{model}", "{corpus}")),
    params:
        documents=lambda wc: heldout_settings(wc.model),
        first_doc=lambda wc: heldout_first_doc(config, documents_for_model(wc.model)),
    log:
        "logs/loss/tokenize_heldout/{model}/{corpus}.log",
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
        shards=lambda wc: map_shards(wc.model),
        code=library_code("trustmass.loss.cell_map", "trustmass.plumbing.rule_io"),
    output:
        map="results/loss/{model}/map.parquet",
        prov=prov("results/loss/{model}/map.parquet"),
    params:
        config=params_from_config("statistics/map_budget", "statistics/flat_mass"),
    log:
        "logs/loss/map/{model}.log",
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
        model="resources/models/{model}/config.json",
        source=model_source_record("{model}"),
        heldout=lambda wc: heldout_path(wc.model, wc.corpus),
        capture_documents=lambda wc: capture_manifest(wc.model, wc.corpus),
        map="results/loss/{model}/map.parquet",
        probe=lambda wc: probe_outputs(wc.model),
        code=library_code("trustmass.loss.document", "trustmass.loss.job", "trustmass.loss.probe", "trustmass.plumbing.rule_io"),
    output:
        tokens=loss_tokens("{model}", "{corpus}", "{doc}"),
        cells="results/loss/{model}/{corpus}/{doc}.cells.parquet",
        prov=[prov(loss_tokens("{model}", "{corpus}", "{doc}")), prov("results/loss/{model}/{corpus}/{doc}.cells.parquet")],
    params:
        config=params_from_config("seed", "loss", "capture/device", "budgets", "enumeration", "balancing"),
    wildcard_constraints:
        doc="[0-9]{4}",
    log:
        "logs/loss/document/{model}/{corpus}/{doc}.log",
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
        model="resources/models/{model}/config.json",
        source=model_source_record("{model}"),
        heldout=lambda wc: heldout_path(wc.model, wc.corpus),
        capture_documents=lambda wc: capture_manifest(wc.model, wc.corpus),
        map="results/loss/{model}/map.parquet",
        code=library_code("trustmass.loss.curvature", "trustmass.loss.job", "trustmass.plumbing.rule_io"),
    output:
        curvature=curvature_path("{model}", "{corpus}", "{doc}"),
        prov=prov(curvature_path("{model}", "{corpus}", "{doc}")),
    params:
        config=params_from_config("seed", "loss", "capture/device", "budgets", "enumeration", "balancing"),
    wildcard_constraints:
        doc="[0-9]{4}",
    log:
        "logs/loss/curvature/{model}/{corpus}/{doc}.log",
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
        shards=lambda wc: allocation_shards(wc.model),
        code=library_code("trustmass.loss.allocation", "trustmass.plumbing.rule_io"),
    output:
        panel="results/loss/{model}/allocation.parquet",
        prov=prov("results/loss/{model}/allocation.parquet"),
    params:
        config=params_from_config("seed", "loss/allocation", "statistics/bootstrap", "statistics/map_budget"),
    log:
        "logs/loss/allocation/{model}.log",
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
        train=lambda wc: probe_shards(wc.model)[0],
        check=lambda wc: probe_shards(wc.model)[1],
        code=library_code("trustmass.loss.probe", "trustmass.plumbing.rule_io"),
    output:
        params="results/loss/{model}/probe.safetensors",
        recall="results/loss/{model}/probe_recall.parquet",
        prov=[prov("results/loss/{model}/probe.safetensors"), prov("results/loss/{model}/probe_recall.parquet")],
    params:
        config=params_from_config("seed", "loss/budget", "loss/probe"),
    log:
        "logs/loss/probe/{model}.log",
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
        model="resources/models/{model}/config.json",
        source=model_source_record("{model}"),
        heldout=lambda wc: heldout_path(wc.model, wc.corpus),
        capture_documents=lambda wc: capture_manifest(wc.model, wc.corpus),
        map="results/loss/{model}/map.parquet",
        code=library_code("trustmass.loss.diagnostics", "trustmass.loss.job", "trustmass.plumbing.rule_io"),
    output:
        tokens=diagnostics_path("{model}", "{corpus}", "{doc}"),
        prov=prov(diagnostics_path("{model}", "{corpus}", "{doc}")),
    params:
        config=params_from_config("seed", "loss", "diagnostics", "capture/device", "budgets", "enumeration", "balancing"),
    wildcard_constraints:
        doc="[0-9]{4}",
    log:
        "logs/loss/diagnostics/{model}/{corpus}/{doc}.log",
    threads: config["loss"]["threads"]
    resources:
        mem_mb=6000,
        runtime=60,
    conda:
        "../../envs/trustmass.yaml"
    script:
        "../../scripts/loss_diagnostics.py"
