"""Rule task_statistics: the task contexts' ceiling records + manifests (+ the headline corpus's records,
for the map comparison) -> the frames of claims 42-47.  Glue only: trustmass.report.frames.tasks."""

from trustmass.plumbing.rule_io import start_log  # first: what follows logs to the job's log

started = start_log(snakemake)  # noqa: F821 (snakemake is injected by the script directive)

import json  # noqa: E402
from pathlib import Path  # noqa: E402

from trustmass.plumbing.rule_io import finish, read_parquets, write_parquet  # noqa: E402
from trustmass.report.engine import StatisticsSettings  # noqa: E402
from trustmass.report.frames.tasks import summarize  # noqa: E402

cfg = snakemake.params.config  # noqa: F821
settings = StatisticsSettings.from_config(cfg)
task_files, prose_files = list(snakemake.input.records), list(snakemake.input.prose)  # noqa: F821
manifests = [json.loads(Path(p).read_text(encoding="utf-8")) for p in snakemake.input.manifests]  # noqa: F821
records, prose = read_parquets(task_files), read_parquets(prose_files)
print(f"{records.height} task records from {len(task_files)} files, {prose.height} headline-corpus records; {settings}")
frames = summarize(records, prose, manifests, settings)
outputs = []
for name, frame in frames.items():
    write_parquet(frame, snakemake.output[name])  # noqa: F821
    outputs.append(snakemake.output[name])  # noqa: F821
    print(f"{name}: {frame.height} rows")
print(frames["task_contexts"].filter(frames["task_contexts"]["model"] == "(pooled)"))
finish(
    snakemake,  # noqa: F821
    outputs, [*task_files, *prose_files, *snakemake.input.manifests, *snakemake.input.code], cfg, started,  # noqa: F821
    summary={"task_records": records.height, "headline_values": frames["headline_tasks"].select("claim_id", "value_name").n_unique()},
    seeds={"seed": settings.seed, "bootstrap": settings.bootstrap},
)  # fmt: skip
