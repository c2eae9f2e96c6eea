"""Reports: render results (Markdown now; HTML later). Never computes statistics itself."""

from evalband.report._markdown import comparison_markdown

__all__ = ["comparison_markdown"]
