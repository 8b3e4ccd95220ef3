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
    """Every (model, task, length) job's rows."""
    d = config["deploy"]
    return [deploy_rows(m, t, l) for m in deploy_models() for t in d["tasks"] for l in d["lengths"]]


def replay_outputs():
    """Each deployed model's prefill-only byte replay (none when deploy.replay.methods is empty)."""
    if not config["deploy"]["replay"]["methods"]:
        return []
    return [f"results/deploy/{m}/replay.parquet" for m in deploy_models()]
