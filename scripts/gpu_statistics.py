"""Rule gpu_statistics: the committed GPU check -> the hardware claims' headline rows.
Glue only: trustmass.report.frames.gpu."""

from trustmass.plumbing.rule_io import start_log  # first: what follows logs to the job's log

started = start_log(snakemake)  # noqa: F821 (snakemake is injected by the script directive)

import json  # noqa: E402
from pathlib import Path  # noqa: E402

from trustmass.plumbing.rule_io import finish, write_parquet  # noqa: E402
from trustmass.report.frames.gpu import headline  # noqa: E402

check = json.loads(Path(snakemake.input.check).read_text(encoding="utf-8"))  # noqa: F821
frame = headline(check)
print(f"{check.get('mode')} check on {(check.get('device') or {}).get('name')}: {frame.height} claim rows")
write_parquet(frame, snakemake.output.headline_gpu)  # noqa: F821
finish(
    snakemake,  # noqa: F821
    [snakemake.output.headline_gpu], [snakemake.input.check, *snakemake.input.code], snakemake.params.config, started,  # noqa: F821
    summary={"rows": frame.height, "device": (check.get("device") or {}).get("name"), "mode": check.get("mode")},
)  # fmt: skip
