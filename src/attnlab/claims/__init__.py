"""The claims: their registry (claims/<experiment>.yaml), the expression language a value is written in, the
verdicts computed from the run files, and the outcomes a verdict can have.

Below the report, versions and check: this package imports none of them, nor a page, producer or benchmark.
"""
