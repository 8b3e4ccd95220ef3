"""Rule audit_statistics: the audit records of the headline population -> the audit table, Figure 3's
ROC points and the audit claims.  Glue only: trustmass.report.frames.audit."""

from trustmass.plumbing.rule_io import start_log  # first: what follows logs to the job's log

started = start_log(snakemake)  # noqa: F821 (snakemake is injected by the script directive)

import json  # noqa: E402
from pathlib import Path  # noqa: E402

from trustmass.plumbing.rule_io import finish, read_parquets, write_parquet  # noqa: E402
from trustmass.report.engine import HeadlinePopulation  # noqa: E402
from trustmass.report.frames.audit import FRAMES, AuditStatisticsSettings, summarize  # noqa: E402

cfg = snakemake.params.config  # noqa: F821
settings = AuditStatisticsSettings.from_config(cfg)
population = HeadlinePopulation.from_config(cfg)
files = list(snakemake.input.audit)  # noqa: F821
records = read_parquets(files)
print(f"{records.height} audit records from {len(files)} files; {settings}")
# QK-norm per model, from the shapes the model preparation recorded (trustmass_source.json)
qk_norm = {}
for record in snakemake.input.sources:  # noqa: F821
    qk_norm[Path(record).parent.name] = json.loads(Path(record).read_text()).get("shapes", {}).get("qk_norm")
print(f"qk_norm per model: {qk_norm}")
frames = summarize(records, settings, qk_norm, population)
for name in FRAMES:
    write_parquet(frames[name], snakemake.output[name])  # noqa: F821
    print(f"{name}: {frames[name].height} rows")
finish(
    snakemake,  # noqa: F821
    [snakemake.output[n] for n in FRAMES], [*files, *snakemake.input.sources, *snakemake.input.code], cfg, started,  # noqa: F821
    summary={"records": records.height}, seeds={"seed": settings.summary.seed, "bootstrap": settings.summary.bootstrap},
)  # fmt: skip
