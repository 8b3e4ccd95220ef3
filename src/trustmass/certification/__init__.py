"""Stage: MISOCP certification of ES_pool on a stratified manifest, and the cap-widening sweep."""

#: seconds of one branch-and-bound WORK unit (`bnb_kernels`) on the machine of benchmarks/certify.md: what
#: a budget in units stands for in time there (`certification.bnb_work`; the run-time projection uses it)
WORK_UNIT_SECONDS = 0.56e-9


def budget_seconds(cert: dict) -> float:
    """The seconds per probe / solve a certification config's budget stands for: bnb's work budget at
    WORK_UNIT_SECONDS per unit; the paper's SCIP budget is set to the equivalent of its time limit."""
    if str(cert.get("certifier", "bnb")) == "bnb":
        return float(cert["bnb_work"]) * 1e6 * WORK_UNIT_SECONDS
    return float(cert["time_limit_s"])
