"""The job-end check: every library module a job ran is one of its declared code inputs.

A rule declares the library code its job runs as inputs (``input: code=library_code("trustmass.x", ...)`` in
``workflow/rules/*.smk``: the static import closure of the named modules,
:func:`trustmass.plumbing.provenance.library_sources`), so that editing a module reruns exactly the outputs that
depend on it and every sidecar hashes the code that made its output.  Two things escape that closure: a module
named in the rule's ``library_code(...)`` by nobody (a declaration left out by hand), and a module loaded from a
dotted string (a deployment roster's press class, a catalog's statistics function), which static import analysis
cannot see.  :func:`check_code_inputs`, run by :func:`trustmass.plumbing.rule_io.run_rule` once the job's ``main``
has returned, compares the ``trustmass`` modules the job's process holds in ``sys.modules`` (those loaded by
dotted name included: ``importlib.import_module`` puts them there too) with the declared files, and fails naming
each module left out, the rule and the fix.  It reads ``sys.modules`` and resolves about a hundred paths: a few
milliseconds.

Only the job's own process is checked.  The worker processes of the ceiling, audit and certification jobs are
forked from it and run functions of modules it imported; their function-local imports are in the static closure
of those modules, hence declared.  A worker that loaded a module by dotted name that its parent never loaded
would go unseen (none does: the library's loaders by dotted name -- the deployment roster, the catalog, the loss
selectors' batched masks -- run in the job's own process).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import ModuleType

from trustmass.plumbing.errors import CleanError

__all__ = ["UndeclaredCodeError", "check_code_inputs", "declared_code", "loaded_modules", "undeclared_modules"]

#: the package whose modules are checked (its modules are the ones ``library_code`` declares)
PACKAGE = "trustmass"


class UndeclaredCodeError(CleanError):
    """A job ran a library module that is not among its rule's declared code inputs."""

    def __init__(self, message: str, rule: str, modules: list[str]):
        super().__init__(message)
        self.rule = rule
        self.modules = modules


def loaded_modules(modules: Mapping[str, ModuleType | None] | None = None) -> dict[str, Path]:
    """The ``trustmass`` modules in ``modules`` (default ``sys.modules``) that run a source file: name -> the
    file, resolved (a namespace package, or an entry without a file, runs none)."""
    out = {}
    for name, module in list((sys.modules if modules is None else modules).items()):
        if name != PACKAGE and not name.startswith(f"{PACKAGE}."):
            continue
        file = getattr(module, "__file__", None)
        if file:
            out[name] = Path(file).resolve()
    return out


def declared_code(inputs) -> list[str] | None:
    """A job's declared code inputs (its input named ``code``), or None where the rule declares none."""
    code = inputs.get("code") if isinstance(inputs, Mapping) else getattr(inputs, "code", None)
    if code is None:
        return None
    return [os.fspath(code)] if isinstance(code, (str, os.PathLike)) else [os.fspath(p) for p in code]


def undeclared_modules(
    code: Iterable[str | os.PathLike], modules: Mapping[str, ModuleType | None] | None = None
) -> dict[str, Path]:
    """The loaded ``trustmass`` modules (:func:`loaded_modules`) whose file is none of ``code`` (paths relative to
    the working directory, or absolute): name -> file, sorted by name."""
    declared = {Path(p).resolve() for p in code}
    loaded = loaded_modules(modules)
    return {name: loaded[name] for name in sorted(loaded) if loaded[name] not in declared}


def check_code_inputs(smk, modules: Mapping[str, ModuleType | None] | None = None) -> None:
    """Raise :class:`UndeclaredCodeError` if the job's process ran a ``trustmass`` module that is not among its
    declared code inputs, naming the modules, the rule and where to declare them."""
    code = declared_code(smk.input)
    missing = undeclared_modules(code or [], modules)
    if not missing:
        return
    rule = str(getattr(smk, "rule", "job"))
    where = _defining_file(rule, getattr(smk, "scriptdir", None))
    names = ", ".join(f"{name} ({_shown(path)})" for name, path in missing.items())
    quoted = ", ".join(f'"{name}"' for name in missing)
    if code is None:
        fix = f"declare them: `code=library_code({quoted}, ...)` in the rule's input, in {where}"
        head = f"rule {rule} declares no code input (input `code`) but ran the library modules {names}"
    else:
        fix = f"add {quoted} to the library_code(...) of the rule's `code` input in {where}"
        head = f"rule {rule} ran library modules that are not among its declared code inputs: {names}"
    raise UndeclaredCodeError(
        f"{head}; editing them would rerun nothing and no provenance sidecar records their sha256. Fix: {fix}",
        rule,
        list(missing),
    )


def _shown(path: Path) -> str:
    """``path`` relative to the working directory when it lies below it, absolute otherwise."""
    return path.relative_to(Path.cwd()).as_posix() if path.is_relative_to(Path.cwd()) else str(path)


def _defining_file(rule: str, scriptdir: str | os.PathLike | None) -> str:
    """The rules file that defines (or generates) ``rule``, found in the checkout of the job's script; a control
    arm's copy (``certify_shard_shuffled_text``) is found by its base name (``arm_rule("certify_shard", ...)``)."""
    rules = Path(scriptdir).parent / "workflow" / "rules" if scriptdir else None
    files = sorted(rules.glob("*.smk")) if rules is not None and rules.is_dir() else []
    texts = {f: f.read_text(encoding="utf-8") for f in files}
    parts = rule.split("_")
    for n in range(len(parts), 0, -1):
        base = "_".join(parts[:n])
        for f, text in texts.items():
            if f'arm_rule("{base}"' in text or (
                n == len(parts) and re.search(rf"^\s*rule {re.escape(base)}:", text, re.M)
            ):
                return _shown(f)
    if rule.startswith("render_") or "_statistics" in rule:  # generated from the catalog (trustmass.report.catalog)
        return (
            f"{_shown(rules / 'report.smk') if rules else 'workflow/rules/report.smk'} (the catalog's generated rules)"
        )
    return "the workflow/rules/*.smk file that defines it"
