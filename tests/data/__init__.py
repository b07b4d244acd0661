"""Facts the tests need, kept in the repository: test vectors (``vectors/``, with
``vectors/regenerate.py`` to rebuild them from independent sources), frames
captured from real clients (``frames/``) and the wire layouts document."""

from pathlib import Path

DATA = Path(__file__).resolve().parent
VECTORS = DATA / "vectors"
LAYOUTS_DOC = DATA / "protocol-layouts.md"


def vector_rows(name: str) -> list[list[str]]:
    """The tab-separated rows of ``vectors/<name>``, comment lines left out."""
    text = (VECTORS / name).read_text(encoding="utf-8")
    return [line.split("\t") for line in text.splitlines() if line and not line.startswith("#")]
