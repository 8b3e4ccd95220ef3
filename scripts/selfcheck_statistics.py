"""Rule selfcheck_statistics: the self-check's computed values -> the theory claims' headline rows.
Glue only: trustmass.report.frames.selfcheck."""

from trustmass.plumbing.rule_io import start_log  # first: what follows logs to the job's log

started = start_log(snakemake)  # noqa: F821 (snakemake is injected by the script directive)

import json  # noqa: E402
from pathlib import Path  # noqa: E402

from trustmass.plumbing.rule_io import finish, write_parquet  # noqa: E402
from trustmass.report.frames.selfcheck import headline  # noqa: E402

worked = json.loads(Path(snakemake.input.worked).read_text(encoding="utf-8"))  # noqa: F821
frame = headline(worked)
write_parquet(frame, snakemake.output.headline_selfcheck)  # noqa: F821
finish(
    snakemake,  # noqa: F821
    [snakemake.output.headline_selfcheck], [snakemake.input.worked, *snakemake.input.code], snakemake.params.config, started,  # noqa: F821
    summary={"rows": frame.height, "claims": sorted(set(frame["claim_id"].to_list()))},
)  # fmt: skip
