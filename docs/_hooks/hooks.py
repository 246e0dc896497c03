"""MkDocs hooks: the repository's own Markdown files as pages, and the CLI reference.

* ``README.md`` is the home page, ``CHANGELOG.md``, ``CONTRIBUTING.md``,
  ``benchmarks/README.md`` and ``python/aryl/data/README.md`` are pages too: they
  are written once, for GitHub, and the site shows the same text.
* Links between those files are written as repository paths (``docs/model.md``);
  they are rewritten to the pages that show them.  A link to any other file stays a
  repository path, and the build fails (strict mode) if it resolves to nothing.
* ``<!-- aryl-cli-reference -->`` in a page is replaced by the reference rendered
  from ``aryl.cli``'s parsers (``cli_reference.py``).

check-refs: ignore-file (page names are the site's; a missing source fails the build)
"""

from __future__ import annotations

import posixpath
import re
import sys
from pathlib import Path

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).parent))

import cli_reference  # noqa: E402

# Repository file -> the page that shows it.
PAGES = {
    "README.md": "index.md",
    "CHANGELOG.md": "changelog.md",
    "CONTRIBUTING.md": "contributing.md",
    "benchmarks/README.md": "benchmarks.md",
    "python/aryl/data/README.md": "data.md",
}
CLI_MARKER = "<!-- aryl-cli-reference -->"
LINK = re.compile(r"(\]\()([^)\s]+)(\))")


def on_files(files: Files, config) -> Files:
    """Adds the repository's Markdown files (``PAGES``) to the site."""
    for source, page in PAGES.items():
        text = (ROOT / source).read_text(encoding="utf-8")
        files.append(File.generated(config, page, content=text))
    return files


def _repository_path(page_uri: str) -> str:
    """Where the page's Markdown lives in the repository."""
    for source, page in PAGES.items():
        if page == page_uri:
            return source
    return "docs/" + page_uri


def _rewrite(target: str, page_uri: str) -> str:
    """A link written in the repository file of ``page_uri``, pointed at its page."""
    if re.match(r"^[a-z]+:|^#|^/", target):
        return target
    path, _, anchor = target.partition("#")
    here = posixpath.dirname(_repository_path(page_uri))
    repo_path = posixpath.normpath(posixpath.join(here, path))
    if repo_path in PAGES:
        page = PAGES[repo_path]
    elif repo_path.startswith("docs/"):
        page = repo_path[len("docs/") :]
    elif repo_path.startswith("notebooks/"):
        page = repo_path  # docs/notebooks is a link to notebooks/
    else:
        return target  # left for MkDocs' own link check
    relative = posixpath.relpath(page, posixpath.dirname(page_uri) or ".")
    return relative + ("#" + anchor if anchor else "")


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Repository links to page links; the CLI reference where it is asked for."""
    uri = page.file.src_uri
    markdown = LINK.sub(lambda m: m[1] + _rewrite(m[2], uri) + m[3], markdown)
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_reference.render())
    return markdown
