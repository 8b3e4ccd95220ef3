# Trust the Mass: Forced Weights in KV-Cache Eviction — the paper, regenerated from raw attention.
#
#   snakemake --cores all                      everything below (config.yaml: laptop CPU, minutes)
#   snakemake --cores all bench                one target (any rule name below, or an output path)
#   snakemake --profile profiles/slurm ...     on a SLURM cluster
#
# Each target rule names what it produces; the stages that compute it live in workflow/rules/.
# So far the pipeline has stage 0 (self-check and benchmark).  The ceiling study, figures, tables
# and claims arrive with later stages.

import os

from snakemake.utils import min_version

min_version("9.27")


# The embedded default; `--configfile FILE` merges FILE on top of it.  Resolved next to this
# Snakefile, so `--directory` can point the outputs elsewhere.
configfile: os.path.join(workflow.basedir, "config.yaml")


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/selfcheck.smk"
include: "workflow/rules/sources_common.smk"
include: "workflow/rules/sources.smk"
include: "workflow/rules/capture_common.smk"
include: "workflow/rules/capture.smk"
include: "workflow/rules/ceiling.smk"


localrules:
    all,
    selfcheck,
    bench,
    captures,
    records,
    worked_examples,


# ---- Stage 0: self-check and benchmarks ---------------------------------------------------------


rule selfcheck:
    """The paper's worked examples recomputed by the library (fails if any disagrees)."""
    input:
        rules.worked_examples.output.json,


rule bench:
    """The exhaustive subset search: subsets per second vs a numpy reference."""
    input:
        rules.bench_enumeration.output.json,


# ---- Stage 1-2: sources and capture -----------------------------------------------------------


rule captures:
    """Every capture shard of the study (study.models x study.corpora x documents), validated."""
    input:
        study_shards(),


rule records:
    """Ceiling records of every captured document of the study."""
    input:
        study_records(),


# ---- Everything ------------------------------------------------------------------------------------


rule all:
    """Everything the pipeline produces so far."""
    default_target: True
    input:
        rules.selfcheck.input,
        rules.bench.input,
        rules.captures.input,
        rules.records.input,
