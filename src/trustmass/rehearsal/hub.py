"""A local Hugging Face cache, written as the hub client and ``datasets`` write one after an online download.

Models and files (``huggingface_hub``'s cache, ``$HF_HOME/hub``)::

    models--<org>--<name>/blobs/<sha256>                    the file's bytes
    models--<org>--<name>/snapshots/<commit>/<path>         a relative link to its blob
    models--<org>--<name>/refs/<revision>                   the commit the revision resolved to

so that ``snapshot_download(repo, revision=..., local_files_only=True)`` (what ``HF_HUB_OFFLINE=1`` makes of
every call) and ``hf_hub_download`` find them.  Datasets (``$HF_HOME/datasets``): offline, ``load_dataset``
never reads the hub cache but the Arrow cache an earlier online load prepared
(``datasets.load.CachedDatasetModuleFactory``)::

    <org>___<snake name>/<config id>/<version>/<commit>/{dataset_info.json, <name>-<split>.arrow}

where the config id is the config name, or ``default-data_dir=<dir>`` for a ``data_dir`` load (kvpress's
RULER and LongBench).  :func:`write_dataset` prepares one with datasets' own Parquet builder and files it
under that name.  Commits are content hashes, so a rebuild with the same content resolves to the same
snapshot.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["commit_of", "repo_folder", "write_dataset", "write_repo"]


def commit_of(*parts: bytes | str) -> str:
    """A 40-hex commit id of the given content (git's width; the hub checks nothing more)."""
    digest = hashlib.sha1()
    for part in parts:
        digest.update(part.encode("utf-8") if isinstance(part, str) else part)
        digest.update(b"\0")
    return digest.hexdigest()


def repo_folder(hub_cache: Path, repo_id: str, repo_type: str = "model") -> Path:
    """The cache folder of a repository (``huggingface_hub.file_download.repo_folder_name``)."""
    from huggingface_hub.file_download import repo_folder_name

    return Path(hub_cache) / repo_folder_name(repo_id=repo_id, repo_type=repo_type)


def write_repo(
    hub_cache: Path, repo_id: str, files: Mapping[str, Path], revision: str | None = None, repo_type: str = "model"
) -> tuple[Path, str]:
    """File ``files`` ({path in the repository: local file}) as one snapshot of ``repo_id`` at ``revision``
    (None: ``main``, what an unpinned download resolves); ``(snapshot folder, commit)``.  A snapshot already
    there is replaced."""
    revision = revision or "main"
    hashes = {name: _sha256(Path(path)) for name, path in sorted(files.items())}
    commit = commit_of(repo_id, revision, *[f"{n}:{h}" for n, h in hashes.items()])
    root = repo_folder(hub_cache, repo_id, repo_type)
    snapshot = root / "snapshots" / commit
    if snapshot.exists():
        shutil.rmtree(snapshot)
    for name, path in sorted(files.items()):
        blob = root / "blobs" / hashes[name]
        if not blob.exists():
            blob.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, blob)
        link = snapshot / name
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(blob, link.parent), link)
    ref = root / "refs" / revision
    ref.parent.mkdir(parents=True, exist_ok=True)
    ref.write_text(commit, encoding="utf-8")  # the hub client writes it without a newline
    return snapshot, commit


def write_dataset(
    datasets_cache: Path,
    repo_id: str,
    splits: Mapping[str, Sequence[Mapping]],
    *,
    config: str | None = None,
    data_dir: str | None = None,
) -> Path:
    """Prepare ``splits`` ({split: rows}) as the Arrow cache ``load_dataset(repo_id, config, data_dir=...)`` reads
    offline; the prepared folder."""
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq
    from datasets.naming import camelcase_to_snakecase
    from datasets.packaged_modules.parquet.parquet import Parquet

    namespace, name = repo_id.split("/")
    snake = camelcase_to_snakecase(name)
    config_name = config or "default"
    config_id = datasets.BuilderConfig(config_name).create_config_id(
        config_kwargs={"data_dir": data_dir} if data_dir else {}
    )
    datasets_cache = Path(datasets_cache)
    datasets_cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=datasets_cache, prefix=".build-") as tmp:
        files = {}
        for split, rows in splits.items():
            files[split] = [str(Path(tmp) / f"{split}.parquet")]
            pq.write_table(pa.Table.from_pylist([dict(r) for r in rows]), files[split][0])
        commit = commit_of(repo_id, config_name, data_dir or "", *[_sha256(Path(f[0])) for f in files.values()])
        builder = Parquet(
            cache_dir=str(Path(tmp) / "cache"),
            dataset_name=snake,
            config_name=config_name,
            hash=commit,
            data_files=files,
        )
        with _quiet_datasets():
            builder.download_and_prepare()
        dest = datasets_cache / f"{namespace}___{snake}" / config_id / str(builder.config.version) / commit
        if dest.exists():
            shutil.rmtree(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(builder.cache_dir, dest)
    return dest


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


class _quiet_datasets:
    """datasets' progress bars and info lines off for the duration."""

    def __enter__(self):
        import datasets

        self._bars = datasets.utils.is_progress_bar_enabled()
        datasets.utils.disable_progress_bars()
        self._level = datasets.utils.logging.get_verbosity()
        datasets.utils.logging.set_verbosity_error()

    def __exit__(self, *exc):
        import datasets

        if self._bars:
            datasets.utils.enable_progress_bars()
        datasets.utils.logging.set_verbosity(self._level)
