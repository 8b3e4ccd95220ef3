# trustmass — two commands on a fresh machine:
#   make run    create .venv (once), install the pinned stack, regenerate everything (snakemake)
#   make test   same environment, run the fast tests
# Override any variable on the command line, e.g. `make run CORES=4 VENV=/scratch/venv`.

PYTHON ?= python3
VENV   ?= .venv
CORES  ?= all
PYTEST_ARGS ?=
# pytest-xdist workers of `make test`: one per core, at most 4 (the tiny real study bounds the run beyond that);
# TEST_WORKERS=0 runs the tests in one process
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); if [ $$n -gt 4 ]; then n=4; fi; if [ $$n -lt 2 ]; then n=0; fi; echo $$n)
SNAKEMAKE_ARGS ?=
# Where the installer looks for torch.  Empty: pip's own configuration (here a local directory holds the
# CPU wheel).  Elsewhere, TORCH_INDEX=https://download.pytorch.org/whl/cpu gets the CPU build.
TORCH_INDEX ?=
# The installer: uv (pinned; pip installs it into the venv first) installs the same pins as pip in under half
# the time (a fresh environment with no caches: 59 s against 133 s on 2 cores, docs/run-time.md);
# INSTALLER=pip keeps pip.  uv reads no pip configuration, so the find-links folders pip is configured with
# (here the one that holds the CPU torch wheel) are passed on; --compile-bytecode writes the .pyc files pip
# writes, so no job pays for compiling them.
INSTALLER ?= uv
UV := uv==0.13.9
FIND_LINKS ?= $(or $(PIP_FIND_LINKS),$(shell $(PYTHON) -m pip config get global.find-links 2>/dev/null))
INSTALL_uv  = $(BIN)/uv pip install --python $(BIN)/python --compile-bytecode $(foreach d,$(FIND_LINKS),$(if $(wildcard $(d)),--find-links $(d)))
INSTALL_pip = $(BIN)/python -m pip install --no-input
# $(call install,ARGS): with uv, and with pip where uv fails (a network only pip is configured for, say)
install = $(if $(filter uv,$(INSTALLER)),$(INSTALL_uv) $(1) || { echo "uv failed (above); trying pip (INSTALLER=pip skips uv)" >&2; $(INSTALL_pip) $(1); },$(if $(filter pip,$(INSTALLER)),$(INSTALL_pip) $(1),$(error INSTALLER=$(INSTALLER): use uv or pip)))

BIN   := $(VENV)/bin
STAMP := $(VENV)/.trustmass-installed
# torch goes in first, pinned and on its own, so the installer takes the CPU wheel (on disk, or from
# TORCH_INDEX): torch resolved along with everything else pulls a multi-GB CUDA build.  The pin is
# read from pyproject.toml so there is one place to change it.
PACKAGE := -e '.[test,slurm,kernels]'
TORCH := $(shell sed -n 's/^[[:space:]]*"\(torch==[^"]*\)".*/\1/p' pyproject.toml)

.PHONY: help venv run run-panel rehearse test test-slow test-faults test-cluster check-reference save-reference check-reference-panel save-reference-panel bench gpu-check gpu-wheels job-times dry-run clean

help:
	@echo "make run        regenerate results/ (snakemake --cores $(CORES)) and results/report.html"
	@echo "make test       fast tests (pytest -m 'not slow' on TEST_WORKERS xdist workers: one per core; 0: one process)"
	@echo "make test-slow  long tests (pytest -m slow)"
	@echo "make test-faults  the fault campaign: kills, damaged files, full/read-only disk (tests/faults; root for the disk cases)"
	@echo "make test-cluster  the slurm profile on a real one-node SLURM cluster (root)"
	@echo "make check-reference  compare results/ of 'make run' with the committed reference/default"
	@echo "make rehearse   the dress rehearsal of the paper's run, offline, on small random-weight models (docs/rehearsal.md; over an hour on 2 cores)"
	@echo "make run-panel  the CPU panel (config/cpu-panel.yaml: three packaged models, 4,096-token documents, with its controls; about 2 h on 2 cores)"
	@echo "make check-reference-panel  compare results/ of 'make run-panel' with the committed reference/cpu-panel"
	@echo "make bench      enumeration benchmark, printed as JSON"
	@echo "make gpu-check  the prepared GPU check (benchmarks/gpu/README.md): machine's own python3, no .venv; < 8 min on one GPU"
	@echo "make gpu-wheels the small wheels gpu-check carries (transformers, tokenizers, pytest, ...) into $(GPU_WHEELS)/"
	@echo "make job-times  where the time of the run in results/ went: job-seconds per rule, from the sidecars"
	@echo "make dry-run    what 'make run' would do"
	@echo "make clean      delete results/ (keeps resources/ and .venv)"

# The environment: created once, reinstalled only when pyproject.toml changes.
$(STAMP): pyproject.toml
	@test -n "$(TORCH)" || { echo "no torch==X pin found in pyproject.toml" >&2; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(if $(filter uv,$(INSTALLER)),$(BIN)/python -m pip install --no-input --quiet "$(UV)" || true)
	$(call install,$(if $(TORCH_INDEX),--index-url $(TORCH_INDEX) )"$(TORCH)")
	$(call install,$(PACKAGE))
	@touch $@

venv: $(STAMP)

run: $(STAMP)
	$(BIN)/snakemake --cores $(CORES) $(SNAKEMAKE_ARGS)
	$(BIN)/snakemake --cores $(CORES) --report results/report.html $(SNAKEMAKE_ARGS)

dry-run: $(STAMP)
	$(BIN)/snakemake --dry-run --cores $(CORES) $(SNAKEMAKE_ARGS)

# --dist loadfile: a module's tests run on one worker, so its module-scoped fixtures (the tiny real run, the
# paper's dry-run, ...) are computed once
test: $(STAMP)
	$(BIN)/python -m pytest -m "not slow" -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

test-slow: $(STAMP)
	$(BIN)/python -m pytest -m "slow and not cluster" $(PYTEST_ARGS)

# The fault campaign (docs/reliability.md): each fault injected into a tiny real run (about 10 minutes on
# 2 cores; the full and read-only disk cases mount a tmpfs, so they need root and are skipped without it).
test-faults: $(STAMP)
	$(BIN)/python -m pytest -m slow tests/faults $(PYTEST_ARGS)

# A real one-node SLURM cluster (Debian's slurm-wlm + munge, installed if missing; needs root): the tiny
# study through profiles/slurm with real sbatch submissions, against a local run (tests/cluster).
test-cluster: $(STAMP)
	$(BIN)/python -m pytest -m cluster -s $(PYTEST_ARGS) tests/cluster

# The committed reference run of the embedded default (config.yaml): `make run` first, then compare
# (bitwise, or within stated tolerances; every difference printed; trustmass.report.reference).
REFERENCE ?= reference/default
check-reference: $(STAMP)
	$(BIN)/python -m trustmass.report.reference check --reference $(REFERENCE)

# Replace the reference with this checkout's results/ (after a fresh-clone `make run`).
save-reference: $(STAMP)
	$(BIN)/python -m trustmass.report.reference save --reference $(REFERENCE) --config config.yaml

# The CPU panel (config/cpu-panel.yaml), with its own committed reference.  Run it in a checkout of its
# own (or after `make clean`): results/ holds one study at a time.
PANEL := config/cpu-panel.yaml
PANEL_REFERENCE ?= reference/cpu-panel
run-panel: $(STAMP)
	$(BIN)/snakemake --cores $(CORES) --configfile $(PANEL) $(SNAKEMAKE_ARGS)
	$(BIN)/snakemake --cores $(CORES) --configfile $(PANEL) --report results/report.html $(SNAKEMAKE_ARGS)

check-reference-panel: $(STAMP)
	$(BIN)/python -m trustmass.report.reference check --reference $(PANEL_REFERENCE)

# Replace the panel's reference with this checkout's results/; the README's opening block shows the panel.
save-reference-panel: $(STAMP)
	$(BIN)/python -m trustmass.report.reference save --reference $(PANEL_REFERENCE) --config config.yaml --config $(PANEL)
	$(BIN)/python -m trustmass.report.reference readme --reference $(PANEL_REFERENCE)

# The dress rehearsal (issue 39; docs/rehearsal.md): a local Hugging Face cache of small random-weight models of
# every paper architecture and a few records of every dataset, then config/paper.yaml + paper-deploy.yaml and
# paper.yaml + paper-content.yaml with config/rehearsal.yaml over them, HF_HUB_OFFLINE=1, in $(REHEARSAL)/;
# it ends by printing the rules executed against the rules the paper's configurations plan.  Fresh each time.
REHEARSAL ?= rehearsal
rehearse: $(STAMP)
	$(BIN)/python -m trustmass.rehearsal run --dir $(REHEARSAL) --cores $(CORES) --fresh

bench: $(STAMP)
	$(BIN)/python -m trustmass.bench enumeration

# The prepared GPU check (issue 28; benchmarks/gpu/README.md): kernel tests, kernel / restricted / capture
# timings, the GPU stage test and the paper's H100 claims, into $(GPU_OUT)/gpu-check.{json,md}.  It runs
# on a GPU machine that has only torch, Triton and numpy: no .venv, no polars, no snakemake -- the machine's
# own python with src/ on its path, and the wheels of `make gpu-wheels` (about 24 MB) carried in
# $(GPU_WHEELS)/, unpacked into .gpu-site/ where the machine lacks them.
GPU_PYTHON ?= python3
GPU_WHEELS ?= .gpu-wheels
GPU_OUT    ?= benchmarks/gpu
gpu-check:
	PYTHONPATH=src $(GPU_PYTHON) -m trustmass.bench gpu $(if $(wildcard $(GPU_WHEELS)),--wheels $(GPU_WHEELS)) --out $(GPU_OUT)

gpu-wheels: $(STAMP)
	$(BIN)/python -m trustmass.bench.gpu_wheels download $(GPU_WHEELS)

job-times: $(STAMP)
	$(BIN)/python -m trustmass.cli.job_times results

clean:
	if [ -d results ]; then find results -mindepth 1 -maxdepth 1 ! -name README.md -exec rm -rf {} +; fi
