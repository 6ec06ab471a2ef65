"""The quality report (odm_report/report.pdf) and the statistics in ODM's section names that WebODM reads from
odm_report/stats.json. Pure computation on plain arrays and dictionaries: `statistics` makes the figures,
`overlap` counts the images that see each ground cell, `figures` draws the charts (matplotlib, Agg), `document`
lays out the PDF (fpdf2) and `sections` fills it in ODM's order. The odm_report stage reads the files."""
