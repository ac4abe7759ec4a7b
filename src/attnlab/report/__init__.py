"""The published site: what attnlab.sitedata holds (run files, their verdicts, the versions) in words and charts.

readings, format, tables, charts   values -> sentences, markdown tables, Vega-Lite specs (Altair)
site, context, pages/              the blocks every page has, an experiment page's context, the site's own pages
build, hooks                       all of the above -> markdown pages -> mkdocs build --strict
"""
