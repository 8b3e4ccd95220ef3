"""Corpora: local folders, the stdlib, handbook HTML, R lazy-load data, and the errors that point to a fix."""

import json
import sys
import sysconfig
from pathlib import Path

import pytest
from sources_fixtures import r_lazyload

from trustmass.sources import SourceError
from trustmass.sources import corpora as C
from trustmass.sources.common import sha256_bytes, sha256_file


def quiet(_):
    pass


# ---- local --------------------------------------------------------------------------------------------


@pytest.fixture()
def texts(tmp_path):
    folder = tmp_path / "texts"
    (folder / "sub").mkdir(parents=True)
    (folder / "b.txt").write_text("Second file.\n", encoding="utf-8")
    (folder / "a.txt").write_text("First file, café.", encoding="utf-8")
    (folder / "sub" / "c.txt").write_text("Nested.", encoding="utf-8")
    (folder / "notes.md").write_text("not text", encoding="utf-8")
    return folder


def test_local_corpus_sorted_joined_and_recorded(texts, tmp_path):
    out = tmp_path / "out"
    rec = C.prepare_corpus("mine", {"source": "local", "path": str(texts)}, out, log=quiet)
    text = (out / "corpus.txt").read_text(encoding="utf-8")
    assert text == "First file, café.\n\nSecond file.\n"
    assert [d["name"] for d in rec["documents"]] == ["a.txt", "b.txt"]
    assert [(d["offset"], d["chars"]) for d in rec["documents"]] == [(0, 17), (19, 13)]
    assert rec["sha256"] == sha256_file(out / "corpus.txt") and rec["chars"] == len(text)
    assert rec["inputs"][0] == {"path": str(texts / "a.txt"), "sha256": sha256_file(texts / "a.txt")}
    assert json.loads((out / "corpus.json").read_text()) == rec


def test_local_glob_and_separator(texts, tmp_path):
    spec = {"source": "local", "path": str(texts), "glob": "**/*.txt", "separator": "\n<doc>\n"}
    rec = C.prepare_corpus("mine", spec, tmp_path / "out", log=quiet)
    assert [d["name"] for d in rec["documents"]] == ["a.txt", "b.txt", "sub/c.txt"]
    assert (tmp_path / "out" / "corpus.txt").read_text().count("\n<doc>\n") == 2


def test_local_corpus_is_byte_identical_on_rerun(texts, tmp_path):
    C.prepare_corpus("mine", {"source": "local", "path": str(texts)}, tmp_path / "one", log=quiet)
    C.prepare_corpus("mine", {"source": "local", "path": str(texts)}, tmp_path / "two", log=quiet)
    assert sha256_file(tmp_path / "one" / "corpus.txt") == sha256_file(tmp_path / "two" / "corpus.txt")


def test_local_errors_name_the_path(tmp_path, texts):
    with pytest.raises(SourceError, match="is not a folder"):
        C.prepare_corpus("mine", {"source": "local", "path": str(tmp_path / "nope")}, tmp_path / "o", log=quiet)
    with pytest.raises(SourceError, match=r"no file .* matches '\*\.rst'"):
        C.prepare_corpus("mine", {"source": "local", "path": str(texts), "glob": "*.rst"}, tmp_path / "o", log=quiet)
    (texts / "bad.txt").write_bytes(b"\xff\xfe bad")
    with pytest.raises(SourceError, match="bad.txt is not UTF-8"):
        C.prepare_corpus("mine", {"source": "local", "path": str(texts)}, tmp_path / "o", log=quiet)
    assert not (tmp_path / "o" / "corpus.txt").exists()


# ---- python stdlib ------------------------------------------------------------------------------------


def test_stdlib_top_level_modules_sorted(tmp_path):
    rec = C.prepare_corpus("code", {"source": "python-stdlib"}, tmp_path / "o", log=quiet)
    root = Path(sysconfig.get_paths()["stdlib"])
    expected = sorted(p.name for p in root.glob("*.py"))
    assert [d["name"] for d in rec["documents"]] == expected
    assert rec["python"]["version"] == sys.version.split()[0]
    text = (tmp_path / "o" / "corpus.txt").read_text(encoding="utf-8")
    first = rec["documents"][0]
    assert text[: first["chars"]] == (root / first["name"]).read_text(encoding="utf-8")


def test_stdlib_exclude(tmp_path):
    rec = C.prepare_corpus("code", {"source": "python-stdlib", "exclude": ["_*"]}, tmp_path / "o", log=quiet)
    assert rec["documents"] and not any(d["name"].startswith("_") for d in rec["documents"])


# ---- HTML ----------------------------------------------------------------------------------------------

PAGE = """<?xml version="1.0"?><!DOCTYPE html><html><head><title>Chapitre 1</title>
<style>p {color: red}</style><script>var x = "<p>no</p>";</script></head><body>
<div id="banner"><a href="#"><span class="text">Download the ebook</span></a></div>
<ul class="docnav top"><li class="previous"><a href="a.html"><strong>Précédent</strong></a></li></ul>
<nav>menu</nav>
<div class="chapter"><h1 class="title">Chapitre&nbsp;1. Le   projet</h1>
<div class="toc"><dl class="toc"><dt><a href="x.html">1.1. Section</a></dt></dl></div>
<p>Debian est   une
  distribution &eacute;crite par des b&eacute;n&eacute;voles.</p>
<ul><li>un</li><li>deux <em>et</em> trois</li></ul>
<pre class="screen">$ apt install foo
  indented   line</pre>
<p>Fin.</p></div></body></html>"""


def test_html_to_text_keeps_content_and_drops_navigation():
    text = C.html_to_text(PAGE)
    assert text == (
        "Chapitre\xa01. Le projet\n\n"
        "Debian est une distribution écrite par des bénévoles.\n\n"
        "un\ndeux et trois\n\n"
        "$ apt install foo\n  indented   line\n\n"
        "Fin."
    )


def test_drop_contained_rule():
    pages = [
        ("index.html", "Title page."),
        ("chapter.html", "Intro.\n\nSection one text."),  # the chapter page holds its first section
        ("sect.one.html", "Section   one text."),  # contained (white space collapsed): dropped
        ("sect.two.html", "Section two text."),
        ("copy.html", "Section two text."),  # identical to an earlier page: dropped
    ]
    kept, dropped = C.drop_contained(pages)
    assert [n for n, _ in kept] == ["index.html", "chapter.html", "sect.two.html"]
    assert dropped == [
        {"page": "sect.one.html", "contained_in": "chapter.html"},
        {"page": "copy.html", "contained_in": "sect.two.html"},
    ]


def _handbook(root: Path, lang: str = "fr-FR") -> Path:
    folder = root / "usr/share/doc/debian-handbook/html" / lang
    folder.mkdir(parents=True)

    def page(name, nxt, body):
        link = f'<link rel="next" href="{nxt}" title="n" />' if nxt else ""
        (folder / name).write_text(f"<html><head>{link}</head><body>{body}</body></html>", encoding="utf-8")

    page("index.html", "zeta.html", "<p>Livre.</p>")
    page("zeta.html", "alpha.html", "<p>Chapitre Z.</p><p>Partie commune.</p>")
    page("alpha.html", None, "<p>Partie commune.</p>")  # contained in zeta.html
    page("orphan.html", None, "<p>Hors chaîne.</p>")
    return root


def test_handbook_book_order_and_dedup(tmp_path):
    root = _handbook(tmp_path / "deb")
    docs, extra = C._read_handbook("hb", {"language": "fr-FR"}, root, quiet)
    assert [d.name for d in docs] == ["index.html", "zeta.html", "orphan.html"]
    assert extra["dropped_pages"] == [{"page": "alpha.html", "contained_in": "zeta.html"}]
    assert docs[0].inputs[0]["path"] == "usr/share/doc/debian-handbook/html/fr-FR/index.html"
    docs, _ = C._read_handbook("hb", {"language": "fr-FR", "order": "name"}, root, quiet)
    assert [d.name for d in docs] == ["index.html", "orphan.html", "zeta.html"]
    with pytest.raises(SourceError, match="no language 'de-DE'; available: fr-FR"):
        C._read_handbook("hb", {"language": "de-DE"}, root, quiet)


# ---- R lazy-load data ------------------------------------------------------------------------------------


def test_r_lazyload_reader_and_object_order(tmp_path):
    data = tmp_path / "deb/usr/lib/R/site-library/janeaustenr/data"
    r_lazyload(data, {"persuasion": ["Persuasion", "", "Chapter 1"], "emma": ["EMMA", "By Jane Austen"]})
    objects = C.read_r_lazyload(data / "Rdata.rdx", data / "Rdata.rdb")
    assert list(objects["emma"]) == ["EMMA", "By Jane Austen"]
    docs, extra = C._read_r_package("austen", {}, tmp_path / "deb", quiet)
    assert [d.name for d in docs] == ["emma", "persuasion"]  # alphabetical by variable name
    assert docs[0].text == "EMMA\nBy Jane Austen"
    assert docs[0].inputs[1]["path"].endswith("data/Rdata.rdb")
    docs, _ = C._read_r_package("austen", {"objects": ["persuasion", "emma"]}, tmp_path / "deb", quiet)
    assert [d.name for d in docs] == ["persuasion", "emma"]
    with pytest.raises(SourceError, match="mansfieldpark not among"):
        C._read_r_package("austen", {"objects": ["mansfieldpark"]}, tmp_path / "deb", quiet)


# ---- missing tools and offline sources ----------------------------------------------------------------


def test_debian_without_apt_suggests_local(tmp_path, monkeypatch):
    import trustmass.sources.common as common

    monkeypatch.setattr(common.shutil, "which", lambda name: None)
    spec = {"source": "debian", "package": "r-cran-janeaustenr", "reader": "janeaustenr"}
    with pytest.raises(SourceError) as err:
        C.prepare_corpus("austen", spec, tmp_path / "o", cache_dir=tmp_path / "cache", log=quiet)
    assert "apt-get" in str(err.value) and "source: local" in str(err.value)


def test_debian_without_dpkg_deb_suggests_local(tmp_path, monkeypatch):
    import trustmass.sources.common as common

    cache = tmp_path / "cache" / "debian"
    cache.mkdir(parents=True)
    deb = cache / "r-cran-janeaustenr_1.0.0-1_all.deb"
    deb.write_bytes(b"not really a deb")
    monkeypatch.setattr(common.shutil, "which", lambda name: None)
    monkeypatch.setattr(C.shutil, "which", lambda name: None)
    spec = {
        "source": "debian",
        "package": "r-cran-janeaustenr",
        "reader": "janeaustenr",
        "sha256": sha256_bytes(b"not really a deb"),
    }
    with pytest.raises(SourceError) as err:
        C.prepare_corpus("austen", spec, tmp_path / "o", cache_dir=tmp_path / "cache", log=quiet)
    assert "dpkg-deb" in str(err.value) and "source: local" in str(err.value)


def test_deb_pin_mismatch(tmp_path, monkeypatch):
    cache = tmp_path / "debian"
    cache.mkdir()
    (cache / "pkg_1.0_all.deb").write_bytes(b"x")
    calls = []

    def fake_apt(args, **kw):  # "downloads" the same file again
        calls.append(args)
        if args[1] == "download":
            (cache / "pkg_1.0_all.deb").write_bytes(b"x")
        return _Done(0)

    monkeypatch.setattr(C, "run_tool", fake_apt)
    monkeypatch.setattr(C, "require_tool", lambda tool, what, fix: tool)
    with pytest.raises(SourceError) as err:
        C.fetch_deb("c", "pkg", "1.0", "f" * 64, cache, log=quiet)
    assert "ffff" in str(err.value) and "update `sha256:`" in str(err.value)
    assert calls and calls[0][:2] == ["apt-get", "download"]  # the mismatching cache file was replaced


class _Done:
    def __init__(self, rc):
        self.returncode, self.stdout, self.stderr = rc, "", ""


def test_hf_dataset_offline_fails_early(tmp_path, monkeypatch):
    pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import datasets

    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True, raising=False)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True, raising=False)
    spec = {"source": "hf-dataset", "id": "trustmass-tests/no-such-dataset", "config": "x", "split": "test"}
    with pytest.raises(SourceError) as err:
        C.prepare_corpus("wiki", spec, tmp_path / "o", cache_dir=tmp_path / "cache", log=quiet)
    assert "Hugging Face hub" in str(err.value) and "source: local" in str(err.value)


def test_unknown_source_and_reader(tmp_path):
    with pytest.raises(SourceError, match="unknown source 'ftp'"):
        C.prepare_corpus("x", {"source": "ftp"}, tmp_path / "o", log=quiet)
    with pytest.raises(SourceError, match="unknown reader 'pdf'"):
        C.prepare_corpus("x", {"source": "debian", "package": "p", "reader": "pdf"}, tmp_path / "o", log=quiet)
