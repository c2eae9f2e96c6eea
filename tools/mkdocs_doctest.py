"""A Markdown extension for the API reference: doctest examples render as code.

evalband's docstrings carry their ``>>>`` examples in the prose (they run as doctests); as
Markdown, an output line such as ``['a', 'b']`` would read as a link. This turns each run of
lines from a ``>>>`` line to the next blank line into a code block (``mkdocs.yml`` loads it
as ``mkdocs_doctest``).
"""

from __future__ import annotations

from markdown import Extension, Markdown
from markdown.preprocessors import Preprocessor


class _Doctests(Preprocessor):
    def run(self, lines: list[str]) -> list[str]:
        out: list[str] = []
        in_example = False
        fence = False
        for line in lines:
            if line.lstrip().startswith("```"):
                fence = not fence
            if not fence and not in_example and line.lstrip().startswith(">>>"):
                in_example = True
                indent = line[: len(line) - len(line.lstrip())]
                out.extend(["", f"{indent}```pycon"])
            if in_example and not line.strip():
                out.extend([f"{indent}```", ""])
                in_example = False
                continue
            out.append(line)
        if in_example:
            out.append(f"{indent}```")
        return out


class DoctestExtension(Extension):
    """Register the preprocessor (before the fenced-code one)."""

    def extendMarkdown(self, md: Markdown) -> None:  # noqa: N802 (Markdown's API)
        """Add the preprocessor to ``md``."""
        md.preprocessors.register(_Doctests(md), "evalband_doctests", 40)


def makeExtension(**kwargs: object) -> DoctestExtension:  # noqa: N802 (Markdown's API)
    """The entry point Python-Markdown calls."""
    return DoctestExtension(**kwargs)
