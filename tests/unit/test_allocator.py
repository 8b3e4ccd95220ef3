"""The jobs' glibc allocator settings: set unless the user set them, and in effect in a child process."""

import os
import platform
import subprocess
import sys

import pytest

from trustmass.plumbing.allocator import GLIBC_MALLOC, tune

#: a child that runs 30 attention products of 32 heads over 512 x 512 positions (32 MiB of logits each,
#: as in a deployment job), printing its minor page faults
_CHILD = """
import resource, torch
torch.set_num_threads(1)
q = torch.randn(1, 32, 512, 64)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(30):
    out = torch.softmax(q @ q.transpose(-1, -2), dim=-1) @ q
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def test_tune_sets_the_variables_and_keeps_the_users():
    environ = {"MALLOC_TRIM_THRESHOLD_": "0"}
    assert tune(environ) == {**GLIBC_MALLOC, "MALLOC_TRIM_THRESHOLD_": "0"}
    assert environ["MALLOC_MMAP_THRESHOLD_"] == GLIBC_MALLOC["MALLOC_MMAP_THRESHOLD_"]


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the variables are glibc's")
def test_a_child_process_reuses_freed_large_blocks():
    """Without the settings each 32 MiB block is a fresh mmap, faulted in page by page (8,192 faults per
    block, several blocks per product); with them the freed blocks are reused."""
    base = {k: v for k, v in os.environ.items() if k not in GLIBC_MALLOC}

    def faults(environ):
        run = subprocess.run([sys.executable, "-c", _CHILD], env=environ, capture_output=True, text=True, check=True)
        return int(run.stdout.split()[-1])

    plain, tuned = faults(base), faults({**base, **GLIBC_MALLOC})
    assert plain > 10 * 8_192 and tuned * 4 < plain, (plain, tuned)
