# Helpers for the deployment stage (workflow/rules/deploy.smk): its models, conditions and paths.
# Functions only, no rules.


def deploy_models():
    """deploy.models, or the headline families when empty (none when the stage is off)."""
    if not config["deploy"]["enabled"]:
        return []
    return list(config["deploy"]["models"] or HeadlinePopulation.from_config(config).models)


def deploy_haystack():
    """The corpus text the retrieval contexts are cut from (deploy.haystack, else the headline corpus)."""
    corpus = config["deploy"]["haystack"] or HeadlinePopulation.from_config(config).corpus
    return f"resources/corpora/{corpus}/corpus.txt"


def deploy_rows(model, task, length):
    return f"results/deploy/{model}/{task}/{length}.parquet"


def deploy_outputs():
    """Every (model, task, length) job's rows: the synthetic tasks at each length, each benchmark at its max_length."""
    d = config["deploy"]
    jobs = [(t, l) for t in d["tasks"] for l in d["lengths"]] + [(b["name"], b["max_length"]) for b in d["benchmarks"]]
    return [deploy_rows(m, t, l) for m in deploy_models() for t, l in jobs]


def replay_outputs():
    """Each deployed model's prefill-only byte replay (none when deploy.replay.methods is empty)."""
    if not config["deploy"]["replay"]["methods"]:
        return []
    return [f"results/deploy/{m}/replay.parquet" for m in deploy_models()]


def benchmark_data(name):
    """A deploy.benchmarks entry's local data files, as inputs (none for a synthetic task or hub data)."""
    from trustmass.deploy.names import benchmark_files

    bench = next((b for b in config["deploy"]["benchmarks"] if b["name"] == name), None)
    return [] if bench is None else benchmark_files(bench)
