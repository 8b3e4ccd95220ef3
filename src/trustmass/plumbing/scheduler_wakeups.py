"""One pending scheduler wake-up at a time: a fix for snakemake's multiplying re-evaluation timers.

snakemake 9's ``JobScheduler.schedule`` loop ends every pass, while jobs wait for resources, with
``_schedule_reevalutation(timespan)``: a ``threading.Timer`` that releases the scheduler's semaphore
after the rate limiter's timespan (``--max-jobs-per-timespan``, default ``100/1s``).  Every pass
starts one, and every pass a timer causes starts the next, so each wake-up that is not a timer (a job
finished, a job started) adds one more chain of timers that never ends while jobs are queued.  After k
finished jobs about k chains fire every timespan, each re-running the whole job selection (a ``stat`` of
every input of every ready job): measured, the selections per finished job grow 1, 2, 3, ... 31 over a
60-job run, so the workflow process's work grows with the square of the job count (15 % of the CPU
panel's machine; see docs/run-time.md).  The timers are also non-daemon threads, so a finished run
waits for the last one before the process exits.

The fix keeps the rate limiter's meaning (wake the scheduler once the timespan has passed) and drops
the redundancy: a new wake-up is scheduled only when none is pending, and the timer is a daemon thread.
A pending timer fires no later than the one asked for, and its pass schedules the next one if still
needed, so no wake-up is lost.  ``install`` patches the class in the running snakemake process (the
Snakefile calls it); snakemake versions without the method are left alone.
"""

from __future__ import annotations

import threading

_PATCHED = "_trustmass_single_wakeup"


def _schedule_one_reevaluation(scheduler, delay: float) -> None:
    """Release the scheduler's semaphore after ``delay`` seconds, unless a release is already pending."""
    lock = scheduler.__dict__.setdefault("_trustmass_wakeup_lock", threading.Lock())
    with lock:
        if scheduler.__dict__.get("_trustmass_wakeup_pending"):
            return
        scheduler._trustmass_wakeup_pending = True

    def wake() -> None:
        # Clear the flag before releasing: the pass this release starts may need the next wake-up.
        with lock:
            scheduler._trustmass_wakeup_pending = False
        scheduler._open_jobs.release()

    timer = threading.Timer(delay, wake)
    timer.daemon = True  # a finished run exits at once instead of waiting out the timespan
    timer.start()


def install() -> bool:
    """Patch snakemake's JobScheduler in this process; True when patched (now or before)."""
    try:
        from snakemake.scheduling.job_scheduler import JobScheduler
    except ImportError:  # another snakemake layout: nothing to fix here
        return False
    if getattr(JobScheduler, _PATCHED, False):
        return True
    if not callable(getattr(JobScheduler, "_schedule_reevalutation", None)):
        return False
    JobScheduler._schedule_reevalutation = _schedule_one_reevaluation
    setattr(JobScheduler, _PATCHED, True)
    return True
