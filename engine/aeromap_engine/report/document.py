"""The PDF page layout (fpdf2): A4 portrait, section headings, tables and figures, page numbers.

Text is set in DejaVu Sans, the TrueType font matplotlib ships, so any image or control point name prints
(fpdf2's built-in fonts hold Latin-1 only) and the charts and the text match. Every table cell written is also
recorded as a Row, so what the report says can be checked against stats.json without reading the PDF back.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib
from fpdf import FPDF
from fpdf.fonts import FontFace

from .figures import Chart

FONT = "DejaVu"
FONT_DIR = Path(matplotlib.get_data_path()) / "fonts" / "ttf"
MARGIN = 15.0  # mm
LINE = 4.8  # mm per table line
ACCENT = (31, 95, 139)
HEADING_FILL = (228, 236, 244)


@dataclass(frozen=True)
class Row:
    """One table cell as printed: the section, the row's label (with the column's for tables of several
    columns), the text and the value it shows."""

    section: str
    key: str
    text: str
    value: Any = None


@dataclass(frozen=True)
class Cell:
    text: str
    value: Any = None


class _Pages(FPDF):
    def footer(self) -> None:
        self.set_y(-10)
        self.set_font(FONT, size=7)
        self.set_text_color(120)
        self.cell(0, 5, f"Page {self.page_no()} of {{nb}}", align="C")


class Document:
    """A report being written, top to bottom."""

    def __init__(self, title: str, subtitle: Sequence[str]) -> None:
        pdf = _Pages(orientation="P", unit="mm", format="A4")
        pdf.add_font(FONT, "", FONT_DIR / "DejaVuSans.ttf")
        pdf.add_font(FONT, "B", FONT_DIR / "DejaVuSans-Bold.ttf")
        pdf.set_margins(MARGIN, MARGIN, MARGIN)
        pdf.set_auto_page_break(True, MARGIN)
        pdf.set_title(title)
        pdf.set_creator("Aeromap")
        pdf.add_page()
        self.pdf = pdf
        self.rows: list[Row] = []
        self._section = ""
        pdf.set_font(FONT, "B", 20)
        pdf.set_text_color(*ACCENT)
        pdf.cell(0, 12, title, new_x="LMARGIN", new_y="NEXT")
        pdf.set_font(FONT, size=9)
        pdf.set_text_color(90)
        for line in subtitle:
            pdf.cell(0, 5, line, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(3)

    @property
    def width(self) -> float:
        """Width of the text area, mm."""
        return self.pdf.epw

    def space_left(self) -> float:
        return self.pdf.page_break_trigger - self.pdf.get_y()

    def section(self, title: str, needs: float = 50.0) -> None:
        """A section heading, on a new page when less than `needs` mm are left below it."""
        self._section = title
        if self.space_left() < needs + 12:
            self.pdf.add_page()
        pdf = self.pdf
        pdf.ln(2)
        pdf.set_font(FONT, "B", 13)
        pdf.set_text_color(*ACCENT)
        pdf.cell(0, 8, title, new_x="LMARGIN", new_y="NEXT")
        pdf.set_draw_color(*ACCENT)
        pdf.set_line_width(0.4)
        pdf.line(pdf.l_margin, pdf.get_y(), pdf.l_margin + self.width, pdf.get_y())
        pdf.ln(2.5)

    def subheading(self, text: str, needs: float = 30.0) -> None:
        """A heading inside a section, on a new page when less than `needs` mm are left below it."""
        if self.space_left() < needs + 7:
            self.pdf.add_page()
        self.pdf.set_font(FONT, "B", 10)
        self.pdf.set_text_color(40)
        self.pdf.cell(0, 7, text, new_x="LMARGIN", new_y="NEXT")

    def note(self, text: str) -> None:
        """A small grey paragraph, kept on one page."""
        if self.space_left() < self.note_height(text):
            self.pdf.add_page()
        self._note_style()
        self.pdf.multi_cell(0, 4, text, new_x="LMARGIN", new_y="NEXT")
        self.pdf.ln(1.5)

    def note_height(self, text: str) -> float:
        if not text:
            return 0.0
        self._note_style()
        return self.pdf.multi_cell(0, 4, text, dry_run=True, output="HEIGHT") + 1.5

    def _note_style(self) -> None:
        self.pdf.set_font(FONT, size=8)
        self.pdf.set_text_color(100)

    def key_values(self, rows: Sequence[tuple[str, Cell]], key_share: float = 0.42) -> None:
        """A two-column table of labels and values."""
        self._start_table(len(rows))
        with self.pdf.table(col_widths=(key_share, 1 - key_share), first_row_as_headings=False,
                            borders_layout="HORIZONTAL_LINES", line_height=LINE, text_align=("LEFT", "LEFT"),
                            width=self.width, padding=(0.6, 1.5)) as table:
            for key, cell in rows:
                row = table.row()
                row.cell(key, style=FontFace(emphasis="BOLD"))
                row.cell(cell.text)
                self.rows.append(Row(self._section, key, cell.text, cell.value))
        self.pdf.ln(3)

    def table(self, header: Sequence[str], rows: Sequence[Sequence[Cell]], widths: Sequence[float] | None = None
              ) -> None:
        """A table with a header; the first cell of each row labels it. Each cell is recorded under
        "row label / column heading"."""
        self._start_table(len(rows) + 1)
        align = ["LEFT"] + ["RIGHT"] * (len(header) - 1)
        with self.pdf.table(col_widths=widths, borders_layout="HORIZONTAL_LINES", line_height=LINE,
                            text_align=align, width=self.width, padding=(0.6, 1.5),
                            headings_style=FontFace(emphasis="BOLD", fill_color=HEADING_FILL)) as table:
            heading = table.row()
            for text in header:
                heading.cell(text)
            for cells in rows:
                row = table.row()
                for column, cell in enumerate(cells):
                    row.cell(cell.text)
                    key = cells[0].text if column == 0 else f"{cells[0].text} / {header[column]}"
                    self.rows.append(Row(self._section, key, cell.text, cell.value))
        self.pdf.ln(3)

    def _start_table(self, rows: int) -> None:
        """Table style; a new page when the table would be split although it fits on one."""
        self.pdf.set_font(FONT, size=8.5)
        self.pdf.set_text_color(20)
        self.pdf.set_draw_color(190)
        self.pdf.set_line_width(0.2)
        height = self.table_height(rows)
        if self.space_left() < height and height < self.pdf.eph - 20:
            self.pdf.add_page()

    def figures(self, charts: Sequence[Chart], width: float | None = None, caption: str = "",
                shrink: float = 0.7) -> None:
        """Charts side by side, each `width` mm wide (by default they share the text width), centred. When they
        do not fit below, they are made smaller, down to `shrink` of their size, before going to a new page."""
        gap = 4.0
        each = width or (self.width - gap * (len(charts) - 1)) / len(charts)
        height = max(each * chart.aspect for chart in charts)
        room = self.space_left() - self.note_height(caption) - 1.5
        if room < height:
            if room >= shrink * height:
                each, height = each * room / height, room
            else:
                self.pdf.add_page()
        total = each * len(charts) + gap * (len(charts) - 1)
        x = self.pdf.l_margin + (self.width - total) / 2
        top = self.pdf.get_y()
        for chart in charts:
            self.pdf.image(io.BytesIO(chart.data), x=x, y=top, w=each, h=each * chart.aspect)
            x += each + gap
        self.pdf.set_y(top + height + 1.5)
        if caption:
            self.note(caption)

    def figure_height(self, charts: Sequence[Chart], width: float | None = None, caption: str = "",
                      shrink: float = 0.7) -> float:
        """The least height (mm) that `figures` needs for these charts and their caption."""
        each = width or (self.width - 4.0 * (len(charts) - 1)) / len(charts)
        return shrink * max(each * chart.aspect for chart in charts) + self.note_height(caption) + 1.5

    @staticmethod
    def table_height(rows: int) -> float:
        """About the height (mm) of a table of that many one-line rows."""
        return rows * (LINE + 1.2)

    def output(self) -> bytes:
        return bytes(self.pdf.output())

    @property
    def pages(self) -> int:
        return self.pdf.page_no()
