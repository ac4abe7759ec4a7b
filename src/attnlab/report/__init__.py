"""Turn run files into verdicts, tables, charts and the published site.

claims   registry -> verdict per claim (claims.csv)
tables   run files -> tidy pandas tables (ladder.csv, curves)
charts   tables -> Vega-Lite specs (Altair)
site     all of the above -> markdown pages -> mkdocs build --strict
"""
