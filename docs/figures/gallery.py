"""Draws the figures of docs/gallery.md by running the page's own code blocks.

The page's ``python`` blocks run in order in one namespace; a block followed by an
image (a PNG in docs/figures/gallery/) leaves its figure in ``fig``, which is saved
as that image. So the code shown is the code that drew each picture.

Run: python docs/figures/gallery.py  (tests/py/test_plot_paper.py runs ``draw`` too)
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

PAGE = Path(__file__).resolve().parents[1] / "gallery.md"
#: A code block, and the image right after it if there is one.
BLOCK = re.compile(r"```python\n(.*?)```\s*(?:!\[[^\]]*\]\(([^)]+\.png)\))?", re.S)
DPI = 80  # small PNGs: the page shows them at about their size


def blocks(page: Path = PAGE) -> List[Tuple[str, Optional[str]]]:
    """(code, image path relative to docs/ or None) of each block of the page."""
    return [(m[1], m[2]) for m in BLOCK.finditer(page.read_text(encoding="utf-8"))]


def draw(out: Optional[Path] = None) -> List[Path]:
    """Runs the page's blocks and saves each figure (under ``out`` instead of docs/
    when given); returns the files written."""
    docs = PAGE.parent
    namespace: Dict[str, Any] = {}
    written = []
    for code, image in blocks():
        exec(compile(code, str(PAGE), "exec"), namespace)
        if image is not None:
            path = (out or docs) / image
            path.parent.mkdir(parents=True, exist_ok=True)
            namespace.pop("fig").savefig(path, dpi=DPI)
            written.append(path)
    return written


if __name__ == "__main__":
    for path in draw():
        print(f"wrote {path} ({path.stat().st_size / 1e3:.0f} kB)")
