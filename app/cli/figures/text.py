"""Plain-text tables for the figures, laid out as the seeds print them."""


def table(head: list[str], rows: list[list[str]]) -> list[str]:
    """Left-aligned columns, two spaces apart, each as wide as its widest cell."""
    widths = [max(len(row[i]) for row in [head, *rows]) for i in range(len(head))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in [head, *rows]]
