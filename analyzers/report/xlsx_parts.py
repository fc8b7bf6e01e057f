"""The fixed parts of an XLSX package (Office Open XML, ECMA-376) and the worksheet frame.

write_xlsx.py fills the cells; this module holds the declarative rest: content types,
relationships, the workbook with its sheet list and autofilter names, and the style table
whose `cellXfs` order write_xlsx.py's style constants index (0 plain, 1 title, 2 bold,
3 left-aligned, 4 section heading, 5 header, 6 "#,##0.000", 7 "0.00", 8 "#,##0").
"""

from __future__ import annotations

from collections.abc import Sequence
from xml.sax.saxutils import escape, quoteattr

MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PACKAGE_REL = "http://schemas.openxmlformats.org/package/2006/relationships"
OFFICE = "application/vnd.openxmlformats-officedocument"
HEAD = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'

STYLES = (
    f'<styleSheet xmlns="{MAIN}">'
    '<numFmts count="1"><numFmt numFmtId="164" formatCode="#,##0.000"/></numFmts>'
    '<fonts count="5">'
    '<font><sz val="11"/><name val="Calibri"/><family val="2"/></font>'
    '<font><b val="1"/><sz val="14"/></font>'
    '<font><b val="1"/></font>'
    '<font><b val="1"/><sz val="12"/></font>'
    '<font><b val="1"/><color rgb="FFFFFFFF"/></font>'
    "</fonts>"
    '<fills count="3"><fill><patternFill/></fill><fill><patternFill patternType="gray125"/>'
    '</fill><fill><patternFill patternType="solid"><fgColor rgb="FF1F3864"/></patternFill>'
    "</fill></fills>"
    '<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>'
    '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/>'
    "</cellStyleXfs>"
    '<cellXfs count="9">'
    '<xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>'
    '<xf numFmtId="0" fontId="1" fillId="0" borderId="0" xfId="0" applyFont="1"/>'
    '<xf numFmtId="0" fontId="2" fillId="0" borderId="0" xfId="0" applyFont="1"/>'
    '<xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0" applyAlignment="1">'
    '<alignment horizontal="left"/></xf>'
    '<xf numFmtId="0" fontId="3" fillId="0" borderId="0" xfId="0" applyFont="1"/>'
    '<xf numFmtId="0" fontId="4" fillId="2" borderId="0" xfId="0" applyFont="1" '
    'applyFill="1" applyAlignment="1"><alignment vertical="top" wrapText="1"/></xf>'
    '<xf numFmtId="164" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>'
    '<xf numFmtId="2" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>'
    '<xf numFmtId="3" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>'
    "</cellXfs>"
    '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>'
    "</styleSheet>"
)
# roofline efficiency (%): red at 0, yellow at 50, green at 100
COLOUR_SCALE = (
    '<cfRule type="colorScale" priority="{priority}"><colorScale>'
    '<cfvo type="num" val="0"/><cfvo type="num" val="50"/><cfvo type="num" val="100"/>'
    '<color rgb="FFF8696B"/><color rgb="FFFFEB84"/><color rgb="FF63BE7B"/>'
    "</colorScale></cfRule>"
)
FROZEN_VIEW = (
    '<sheetView workbookViewId="0"><pane xSplit="1" ySplit="1" topLeftCell="B2" '
    'activePane="bottomRight" state="frozen"/><selection pane="topRight"/>'
    '<selection pane="bottomLeft"/><selection pane="bottomRight" activeCell="B2" sqref="B2"/>'
    "</sheetView>"
)
PLAIN_VIEW = '<sheetView workbookViewId="0"><selection activeCell="A1" sqref="A1"/></sheetView>'


def worksheet(
    *,
    dimension: str,
    frozen: bool,
    cols: str,
    data: str,
    autofilter: str | None,
    scales: Sequence[str],
) -> str:
    """A worksheet part; its children in the order the schema requires."""
    cf = "".join(
        f'<conditionalFormatting sqref="{ref}">{COLOUR_SCALE.format(priority=i)}'
        "</conditionalFormatting>"
        for i, ref in enumerate(scales, start=1)
    )
    return (
        f'{HEAD}<worksheet xmlns="{MAIN}" xmlns:r="{REL}">'
        f'<dimension ref="{dimension}"/>'
        f"<sheetViews>{FROZEN_VIEW if frozen else PLAIN_VIEW}</sheetViews>"
        '<sheetFormatPr defaultRowHeight="15"/>'
        + (f"<cols>{cols}</cols>" if cols else "")
        + f"<sheetData>{data}</sheetData>"
        + (f'<autoFilter ref="{autofilter}"/>' if autofilter else "")
        + cf
        + '<pageMargins left="0.75" right="0.75" top="1" bottom="1" header="0.5" footer="0.5"/>'
        "</worksheet>"
    )


def _absolute(ref: str) -> str:
    """A1:C9 -> $A$1:$C$9."""
    out = []
    for corner in ref.split(":"):
        letters = corner.rstrip("0123456789")
        out.append(f"${letters}${corner[len(letters) :]}")
    return ":".join(out)


def _workbook(names: Sequence[str], filters: Sequence[str | None]) -> str:
    sheets = "".join(
        f'<sheet name={quoteattr(name)} sheetId="{i}" r:id="rId{i}"/>'
        for i, name in enumerate(names, start=1)
    )
    defined = "".join(
        f'<definedName name="_xlnm._FilterDatabase" localSheetId="{i}" hidden="1">'
        + escape("'" + name.replace("'", "''") + "'!" + _absolute(ref))
        + "</definedName>"
        for i, (name, ref) in enumerate(zip(names, filters, strict=True))
        if ref
    )
    return (
        f'{HEAD}<workbook xmlns="{MAIN}" xmlns:r="{REL}"><workbookPr/>'
        '<bookViews><workbookView activeTab="0"/></bookViews>'
        f"<sheets>{sheets}</sheets>"
        + (f"<definedNames>{defined}</definedNames>" if defined else "")
        + '<calcPr calcId="124519" fullCalcOnLoad="1"/></workbook>'
    )


def _relationships(targets: Sequence[tuple[str, str]]) -> str:
    rels = "".join(
        f'<Relationship Id="rId{i}" Type="{kind}" Target="{target}"/>'
        for i, (kind, target) in enumerate(targets, start=1)
    )
    return f'{HEAD}<Relationships xmlns="{PACKAGE_REL}">{rels}</Relationships>'


def _content_types(sheet_count: int) -> str:
    sheet = f"{OFFICE}.spreadsheetml.worksheet+xml"
    overrides = [
        ("/xl/workbook.xml", f"{OFFICE}.spreadsheetml.sheet.main+xml"),
        ("/xl/styles.xml", f"{OFFICE}.spreadsheetml.styles+xml"),
        ("/docProps/core.xml", "application/vnd.openxmlformats-package.core-properties+xml"),
        ("/docProps/app.xml", f"{OFFICE}.extended-properties+xml"),
        *((f"/xl/worksheets/sheet{i}.xml", sheet) for i in range(1, sheet_count + 1)),
    ]
    return (
        f'{HEAD}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" '
        'ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        + "".join(f'<Override PartName="{p}" ContentType="{t}"/>' for p, t in overrides)
        + "</Types>"
    )


CORE = (
    f"{HEAD}<cp:coreProperties "
    'xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" '
    'xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:creator>rooflens</dc:creator>'
    "</cp:coreProperties>"
)
APP = (
    f'{HEAD}<Properties xmlns="http://schemas.openxmlformats.org/officeDocument/2006/'
    'extended-properties"><Application>rooflens</Application></Properties>'
)


def package(names: Sequence[str], filters: Sequence[str | None]) -> dict[str, str]:
    """Every part but the worksheets, by path in the zip."""
    office_rel = REL
    book_rels = [
        (f"{office_rel}/worksheet", f"worksheets/sheet{i}.xml") for i in range(1, len(names) + 1)
    ]
    book_rels.append((f"{office_rel}/styles", "styles.xml"))
    package_rels = [
        (f"{office_rel}/officeDocument", "xl/workbook.xml"),
        (f"{PACKAGE_REL}/metadata/core-properties", "docProps/core.xml"),
        (f"{office_rel}/extended-properties", "docProps/app.xml"),
    ]
    return {
        "[Content_Types].xml": _content_types(len(names)),
        "_rels/.rels": _relationships(package_rels),
        "docProps/core.xml": CORE,
        "docProps/app.xml": APP,
        "xl/workbook.xml": _workbook(names, filters),
        "xl/_rels/workbook.xml.rels": _relationships(book_rels),
        "xl/styles.xml": STYLES,
    }
