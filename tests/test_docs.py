"""The documentation site builds with `mkdocs build --strict`: every page is in the nav, and
no link or anchor is broken (mkdocs.yml turns those checks into warnings, strict into errors)."""

import os
import re
import subprocess
import sys

import mkdocs  # noqa: F401 -- in the test extra: the docs build is part of the test run

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_site_builds_strict(tmp_path):
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
                        "-f", os.path.join(ROOT, "mkdocs.yml"), "-d", str(tmp_path / "site")],
                       capture_output=True, text=True, timeout=300, cwd=ROOT, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    pages = [f[:-3] for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md")]
    for page in pages:
        built = "index.html" if page == "index" else os.path.join(page, "index.html")
        assert os.path.exists(tmp_path / "site" / built), page


def test_readme_links_every_page():
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    linked = set(re.findall(r"\]\(docs/([\w.]+\.md)\)", readme))
    pages = {f for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md")}
    assert pages - {"index.md"} <= linked, pages - linked
    assert all(os.path.exists(os.path.join(ROOT, "docs", p)) for p in linked)
