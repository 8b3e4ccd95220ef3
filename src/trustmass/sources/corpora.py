"""Corpora: one UTF-8 text file per corpus, ``resources/corpora/<name>/corpus.txt`` + ``corpus.json``.

Each corpus in the config names a ``source``:

``debian``
    A Debian package fetched with ``apt-get download`` (into the cache; nothing is installed) and
    unpacked with ``dpkg-deb -x``; a ``reader`` turns its files into documents:

    ``janeaustenr`` / ``r-lazyload``
        R lazy-load data (``data/Rdata.rdx`` + ``Rdata.rdb``) read without R (PyPI ``rdata``); each
        character-vector object is one document, its lines joined with ``\\n``.  ``objects`` gives the
        order (default: every character vector, alphabetical by variable name).
    ``debian-handbook``
        ``usr/share/doc/debian-handbook/html/<language>/*.html``; see :func:`html_to_text` for what is
        kept and :func:`drop_contained` for the de-duplication rule.  Pages come in book order (the
        ``<link rel="next">`` chain from ``index.html``; ``order: name`` sorts by file name instead).
``python-stdlib``
    The running interpreter's standard-library ``.py`` files, top-level modules only unless
    ``subpackages: true``, sorted by path; the Python version is recorded.
``local``
    A folder of text files (``path``, ``glob`` default ``*.txt``), sorted by relative path.
``hf-dataset``
    ``datasets.load_dataset(id, config, split=..., revision=...)``, the ``field`` of every row
    concatenated in order with ``row_separator`` (wikitext rows already end in ``\\n``: use ``""``).

Documents are joined with ``separator`` (default ``"\\n\\n"``).  ``corpus.json`` records the source,
every input file with its sha256, the ``.deb`` (file name, sha256, version), each document's name,
character offset and length, and the text's length and sha256.
"""

from __future__ import annotations

import fnmatch
import gzip
import json
import os
import re
import shutil
import struct
import sys
import sysconfig
import tempfile
import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trustmass.sources.common import SourceError, check_name, require_tool, run_tool, sha256_bytes, sha256_file, tail
from trustmass.sources.html_text import SKIP_CLASSES, SKIP_IDS, SKIP_TAGS, drop_contained, html_to_text

__all__ = [
    "Document",
    "drop_contained",
    "fetch_deb",
    "html_to_text",
    "prepare_corpus",
    "read_r_lazyload",
]

Log = Callable[[str], None]
DEFAULT_SEPARATOR = "\n\n"


@dataclass
class Document:
    name: str
    text: str
    inputs: list[dict] = field(default_factory=list)  # [{path, sha256}]


# --------------------------------------------------------------------------------------------------
# entry point


def prepare_corpus(
    name: str,
    spec: Mapping[str, Any],
    out_dir: str | os.PathLike,
    cache_dir: str | os.PathLike = "resources/cache",
    log: Log = print,
) -> dict:
    """Write ``out_dir/corpus.txt`` and ``out_dir/corpus.json`` (atomically); return the record."""
    from trustmass.plumbing.provenance import atomic_write

    check_name("corpus", name)
    source = spec.get("source")
    readers = {
        "debian": _from_debian,
        "python-stdlib": _from_stdlib,
        "local": _from_local,
        "hf-dataset": _from_hf_dataset,
    }
    if source not in readers:
        raise SourceError(f"corpus {name!r}: unknown source {source!r}; use one of {', '.join(sorted(readers))}")
    started = time.time()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    documents, record = readers[source](name, spec, Path(cache_dir), out_dir, log)
    documents = [d for d in documents if d.text.strip()]
    if not documents:
        raise SourceError(f"corpus {name!r}: the {source} source produced no text; check its settings")
    separator = spec.get("separator", DEFAULT_SEPARATOR)
    text, listing, offset = [], [], 0
    for i, doc in enumerate(documents):
        if i:
            text.append(separator)
            offset += len(separator)
        text.append(doc.text)
        listing.append(
            {
                "name": doc.name,
                "offset": offset,
                "chars": len(doc.text),
                "sha256": sha256_bytes(doc.text.encode("utf-8")),
            }
        )
        offset += len(doc.text)
    corpus = "".join(text)
    data = corpus.encode("utf-8")
    inputs = [entry for doc in documents for entry in doc.inputs]
    record = {
        "corpus": name,
        "source": source,
        **record,
        "separator": separator,
        "documents": listing,
        "inputs": _unique(inputs),
        "chars": len(corpus),
        "bytes": len(data),
        "sha256": sha256_bytes(data),
        "prepare_seconds": round(time.time() - started, 3),
    }
    with atomic_write(out_dir / "corpus.json") as tmp:
        tmp.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    with atomic_write(out_dir / "corpus.txt") as tmp:
        tmp.write_bytes(data)
    log(f"corpus {name}: {len(listing)} documents, {len(corpus):,} characters, sha256 {record['sha256'][:16]}...")
    return record


def _unique(entries: Iterable[dict]) -> list[dict]:
    seen, out = set(), []
    for entry in entries:
        key = (entry.get("path"), entry.get("sha256"))
        if key not in seen:
            seen.add(key)
            out.append(entry)
    return out


# --------------------------------------------------------------------------------------------------
# debian packages


def _from_debian(name: str, spec: Mapping[str, Any], cache: Path, out_dir: Path, log: Log):
    package = spec.get("package")
    if not package:
        raise SourceError(f"corpus {name!r}: a debian corpus needs `package:` (e.g. r-cran-janeaustenr)")
    reader = spec.get("reader")
    readers = {"janeaustenr": _read_r_package, "r-lazyload": _read_r_package, "debian-handbook": _read_handbook}
    if reader not in readers:
        raise SourceError(f"corpus {name!r}: unknown reader {reader!r}; use one of {', '.join(sorted(readers))}")
    deb = fetch_deb(name, package, spec.get("version"), spec.get("sha256"), cache / "debian", log=log)
    dpkg_deb = require_tool(
        "dpkg-deb",
        f"corpus {name!r} (a Debian package)",
        "fix: run on a Debian/Ubuntu machine, or unpack the package elsewhere and use `source: local`.",
    )
    root = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{name}.deb-"))
    try:
        done = run_tool([dpkg_deb, "-x", str(deb["path"]), str(root)])
        if done.returncode != 0:
            raise SourceError(
                f"corpus {name!r}: `dpkg-deb -x {deb['path'].name}` failed:\n{tail(done.stdout + done.stderr)}"
            )
        documents, extra = readers[reader](name, spec, root, log)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    record = {
        "reader": reader,
        "package": {k: deb[k] for k in ("name", "version", "architecture", "deb", "sha256", "pinned")},
        **extra,
    }
    return documents, record


def fetch_deb(corpus: str, package: str, version: str | None, pin: str | None, cache: Path, log: Log = print) -> dict:
    """The ``.deb`` of ``package`` in ``cache`` (reused when present and matching), else ``apt-get download``."""
    fix = "fix: run on a Debian/Ubuntu machine with apt, or unpack the package elsewhere and use `source: local`."
    cache.mkdir(parents=True, exist_ok=True)
    deb = _cached_deb(cache, package, version)
    if deb is not None and pin and sha256_file(deb) != pin:
        deb.unlink()
        deb = None
    if deb is None:
        apt_get = require_tool("apt-get", f"corpus {corpus!r} (Debian package {package})", fix)
        target = f"{package}={version}" if version else package
        log(f"corpus {corpus}: apt-get download {target}")
        done = run_tool([apt_get, "download", target], cwd=cache)
        output = done.stdout + done.stderr
        if done.returncode != 0 and _apt_lists_missing(output):
            if os.geteuid() != 0:
                raise SourceError(
                    f"corpus {corpus!r}: apt does not know package {target} (its package lists are missing or stale) "
                    f"and refreshing them needs root.\n{tail(output, 4)}\nfix: run `sudo apt-get update` once, or use `source: local`."
                )
            log(f"corpus {corpus}: apt does not know {target}; running apt-get update once")
            update = run_tool([apt_get, "update"])
            if update.returncode != 0:
                raise SourceError(
                    f"corpus {corpus!r}: `apt-get update` failed (no network?):\n{tail(update.stdout + update.stderr)}\n{fix}"
                )
            done = run_tool([apt_get, "download", target], cwd=cache)
            output = done.stdout + done.stderr
        if done.returncode != 0:
            if _apt_lists_missing(output):
                raise SourceError(
                    f"corpus {corpus!r}: the Debian archive has no package {target}.\n{tail(output, 4)}\nfix: check `package:`/`version:`."
                )
            raise SourceError(
                f"corpus {corpus!r}: `apt-get download {target}` failed (no network?):\n{tail(output)}\n{fix}"
            )
        deb = _cached_deb(cache, package, version)
        if deb is None:
            raise SourceError(f"corpus {corpus!r}: apt-get reported success but no {package}_*.deb is in {cache}")
    info = _deb_fields(deb)
    got = sha256_file(deb)
    if pin and got != pin:
        raise SourceError(
            f"corpus {corpus!r}: {deb.name} has sha256 {got}, but the config pins {pin}. "
            f"fix: if the new package is trusted, update `sha256:` to {got}; otherwise pin `version:` to the one that matches."
        )
    return {
        "name": info.get("Package", package),
        "version": info.get("Version"),
        "architecture": info.get("Architecture"),
        "deb": deb.name,
        "path": deb,
        "sha256": got,
        "pinned": bool(pin),
    }


def _cached_deb(cache: Path, package: str, version: str | None) -> Path | None:
    # apt names files <package>_<version with ':' as %3a>_<arch>.deb
    ver = version.replace(":", "%3a") if version else "*"
    found = sorted(cache.glob(f"{package}_{ver}_*.deb"))
    return found[-1] if found else None


def _apt_lists_missing(output: str) -> bool:
    return any(
        s in output
        for s in (
            "Unable to locate package",
            "has no installation candidate",
            "Can't select candidate",
            "was not found",
        )
    )


def _deb_fields(deb: Path) -> dict[str, str]:
    dpkg_deb = shutil.which("dpkg-deb")
    if dpkg_deb is None:
        return {}
    done = run_tool([dpkg_deb, "-f", str(deb), "Package", "Version", "Architecture"])
    fields = {}
    for line in done.stdout.splitlines():
        key, _, value = line.partition(":")
        if value:
            fields[key.strip()] = value.strip()
    return fields


# --------------------------------------------------------------------------------------------------
# R lazy-load data (janeaustenr, tokenizers' mobydick, ...)


def read_r_lazyload(rdx: Path, rdb: Path | None = None) -> dict[str, Any]:
    """Every object of an R lazy-load database, by variable name (R itself is not needed).

    ``Rdata.rdx`` is a gzip-compressed RDS holding ``variables: name -> (offset, length)`` into
    ``Rdata.rdb``; each record there is a 4-byte big-endian length followed by a compressed serialized
    object (zlib; or a type byte ``Z`` = xz, ``2`` = bzip2, ``1`` = zlib, ``0`` = stored).
    """
    import bz2
    import lzma
    import zlib

    import rdata

    rdb = rdb or rdx.with_suffix(".rdb")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # rdata warns "Unknown file type: assumed RDS" for R's headerless records
        index = rdata.conversion.convert(rdata.parser.parse_data(gzip.decompress(rdx.read_bytes())))
        blob = rdb.read_bytes()
        objects = {}
        for var, (offset, length) in index["variables"].items():
            record = blob[int(offset) : int(offset) + int(length)]
            size = struct.unpack(">I", record[:4])[0]
            body, kind = record[4:], record[4:5]
            if kind == b"Z":
                raw = lzma.decompress(body[1:])
            elif kind == b"2":
                raw = bz2.decompress(body[1:])
            elif kind == b"1":
                raw = zlib.decompress(body[1:])
            elif kind == b"0":
                raw = body[1:]
            else:
                raw = zlib.decompress(body)
            if len(raw) != size:
                raise SourceError(f"{rdb}: record {var!r} has {len(raw)} bytes, its header says {size}")
            objects[str(var)] = rdata.conversion.convert(rdata.parser.parse_data(raw))
    return objects


def _read_r_package(name: str, spec: Mapping[str, Any], root: Path, log: Log):
    found = sorted(root.glob("usr/lib/R/site-library/*/data/Rdata.rdx"))
    if not found:
        raise SourceError(
            f"corpus {name!r}: package {spec.get('package')} holds no R lazy-load data (…/data/Rdata.rdx)"
        )
    rdx = found[0]
    rdb = rdx.with_suffix(".rdb")
    objects = read_r_lazyload(rdx, rdb)
    texts = {k: v for k, v in objects.items() if _is_character_vector(v)}
    wanted = spec.get("objects")
    if wanted:
        missing = [o for o in wanted if o not in texts]
        if missing:
            raise SourceError(
                f"corpus {name!r}: {', '.join(missing)} not among the package's text objects ({', '.join(sorted(texts))}); fix `objects:`"
            )
        order = list(wanted)
    else:
        order = sorted(texts)
    inputs = [{"path": p.relative_to(root).as_posix(), "sha256": sha256_file(p)} for p in (rdx, rdb)]
    documents = [Document(o, "\n".join(str(line) for line in texts[o]), inputs) for o in order]
    log(f"corpus {name}: {len(documents)} R objects ({', '.join(order)})")
    return documents, {"objects": order}


def _is_character_vector(value) -> bool:
    import numpy as np

    return (
        isinstance(value, np.ndarray)
        and value.ndim == 1
        and value.dtype.kind in ("U", "O")
        and all(isinstance(x, str) for x in value[:10])
    )


# --------------------------------------------------------------------------------------------------
# the Debian Administrator's Handbook (HTML to text: trustmass.sources.html_text)


def _read_handbook(name: str, spec: Mapping[str, Any], root: Path, log: Log):
    language = spec.get("language", "en-US")
    base = root / "usr/share/doc/debian-handbook/html"
    folder = base / language
    if not folder.is_dir():
        have = sorted(p.name for p in base.iterdir() if p.is_dir()) if base.is_dir() else []
        raise SourceError(
            f"corpus {name!r}: the handbook has no language {language!r}; available: {', '.join(have) or 'none'}"
        )
    files = {p.name: p for p in folder.glob("*.html")}
    order = spec.get("order", "book")
    if order == "book":
        names = _book_order(folder, files)
    elif order == "name":
        names = sorted(files)
    else:
        raise SourceError(f"corpus {name!r}: order {order!r} is not 'book' or 'name'")
    pages = [(n, html_to_text(files[n].read_text(encoding="utf-8"))) for n in names]
    kept, dropped = drop_contained([(n, t) for n, t in pages if t])
    documents = [
        Document(page, text, [{"path": files[page].relative_to(root).as_posix(), "sha256": sha256_file(files[page])}])
        for page, text in kept
    ]
    log(f"corpus {name}: {len(pages)} pages in {order} order, {len(dropped)} dropped as contained in others")
    return documents, {
        "language": language,
        "order": order,
        "dedup": "pages whose text (white space collapsed) occurs inside another page are dropped; "
        "navigation (tables of contents, prev/next bars, banner) is stripped before comparing",
        "skipped_elements": {"tags": sorted(SKIP_TAGS), "classes": sorted(SKIP_CLASSES), "ids": sorted(SKIP_IDS)},
        "dropped_pages": dropped,
    }


def _book_order(folder: Path, files: Mapping[str, Path]) -> list[str]:
    """Follow ``<link rel="next">`` from index.html; pages not on the chain follow, sorted by name."""
    link = re.compile(r"<link\b[^>]*\brel=\"next\"[^>]*>", re.I)
    href = re.compile(r"\bhref=\"([^\"#]+)")
    order, seen = [], set()
    page = "index.html" if "index.html" in files else None
    while page and page in files and page not in seen:
        order.append(page)
        seen.add(page)
        head = files[page].read_text(encoding="utf-8").split("</head>", 1)[0]
        match = link.search(head)
        page = href.search(match.group(0)).group(1) if match and href.search(match.group(0)) else None
    return order + sorted(set(files) - seen)


# --------------------------------------------------------------------------------------------------
# python stdlib, local folders, HF datasets


def _from_stdlib(name: str, spec: Mapping[str, Any], cache: Path, out_dir: Path, log: Log):
    root = Path(sysconfig.get_paths()["stdlib"])
    pattern = "**/*.py" if spec.get("subpackages", False) else "*.py"
    exclude = list(spec.get("exclude", ()))
    files = sorted(
        (
            p
            for p in root.glob(pattern)
            if "site-packages" not in p.parts
            and not any(fnmatch.fnmatch(p.relative_to(root).as_posix(), e) for e in exclude)
        ),
        key=lambda p: p.relative_to(root).as_posix(),
    )
    documents = []
    for path in files:
        rel = path.relative_to(root).as_posix()
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise SourceError(f"corpus {name!r}: {path} is not UTF-8 ({exc}); add it to `exclude:`") from None
        documents.append(Document(rel, text, [{"path": rel, "sha256": sha256_file(path)}]))
    log(f"corpus {name}: {len(documents)} modules from {root}")
    return documents, {
        "python": {"version": sys.version.split()[0], "implementation": sys.implementation.name, "stdlib": str(root)},
        "subpackages": bool(spec.get("subpackages", False)),
        "exclude": exclude,
    }


def _from_local(name: str, spec: Mapping[str, Any], cache: Path, out_dir: Path, log: Log):
    path = spec.get("path")
    if not path:
        raise SourceError(f"corpus {name!r}: a local corpus needs `path:` (a folder of text files)")
    root = Path(path).expanduser()
    if not root.is_dir():
        raise SourceError(f"corpus {name!r}: path {root} is not a folder; fix `corpora.{name}.path`")
    pattern = spec.get("glob", "*.txt")
    files = sorted((p for p in root.glob(pattern) if p.is_file()), key=lambda p: p.relative_to(root).as_posix())
    if not files:
        raise SourceError(f"corpus {name!r}: no file in {root} matches {pattern!r}; fix `path:` or `glob:`")
    documents = []
    for p in files:
        rel = p.relative_to(root).as_posix()
        try:
            text = p.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise SourceError(f"corpus {name!r}: {p} is not UTF-8 text ({exc}); convert it or narrow `glob:`") from None
        documents.append(Document(rel, text, [{"path": str(p), "sha256": sha256_file(p)}]))
    log(f"corpus {name}: {len(documents)} files from {root}")
    return documents, {"path": str(root.resolve()), "glob": pattern}


def _from_hf_dataset(name: str, spec: Mapping[str, Any], cache: Path, out_dir: Path, log: Log):
    dataset_id = spec.get("id")
    if not dataset_id:
        raise SourceError(f"corpus {name!r}: an hf-dataset corpus needs `id:` (e.g. Salesforce/wikitext)")
    offline = any(
        os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on")
        for v in ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE")
    )
    hint = (
        f"corpus {name!r} ({dataset_id}) needs the Hugging Face hub (or a local datasets cache that already holds it). "
        "fix: run prepare_corpus where the hub is reachable, or save the text as files and use `source: local`"
    )
    try:
        import datasets
    except ImportError:
        raise SourceError(
            f"corpus {name!r}: `source: hf-dataset` needs the `datasets` package; or use `source: local`"
        ) from None
    split = spec.get("split", "test")
    field_name = spec.get("field", "text")
    try:
        ds = datasets.load_dataset(dataset_id, spec.get("config"), split=split, revision=spec.get("revision"))
    except Exception as exc:
        kinds = {cls.__name__ for cls in type(exc).__mro__}
        network = kinds & {
            "ConnectionError",
            "ConnectError",
            "ConnectTimeout",
            "LocalEntryNotFoundError",
            "OfflineModeIsEnabled",
            "TimeoutException",
        }
        if offline or network or "offline" in str(exc).lower() or "connect" in str(exc).lower():
            raise SourceError(
                f"{hint}. ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
            ) from None
        raise SourceError(
            f"corpus {name!r}: load_dataset({dataset_id!r}, {spec.get('config')!r}, split={split!r}) failed: {exc}"
        ) from None
    if field_name not in ds.column_names:
        raise SourceError(
            f"corpus {name!r}: {dataset_id} has no field {field_name!r} (fields: {', '.join(ds.column_names)}); fix `field:`"
        )
    joiner = spec.get("row_separator", "")
    text = joiner.join(ds[field_name])
    log(f"corpus {name}: {len(ds):,} rows of {dataset_id} {spec.get('config') or ''} [{split}]")
    record = {
        "dataset": {
            "id": dataset_id,
            "config": spec.get("config"),
            "split": split,
            "revision": spec.get("revision"),
            "field": field_name,
            "rows": len(ds),
            "row_separator": joiner,
            "fingerprint": getattr(ds, "_fingerprint", None),
            "datasets_version": datasets.__version__,
        }
    }
    return [Document(f"{dataset_id}:{split}", text, [])], record
