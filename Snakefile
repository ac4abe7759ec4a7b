# attnlab: tokenise tiny Shakespeare, train every variant, evaluate, check the chapter's claims, build the site.
#   snakemake --cores 4 --resources gpu=1                                  # the quick profile
#   snakemake --cores 4 --resources gpu=1 --config profile=chapter         # the chapter's exact settings
#   snakemake --cores 4 --resources gpu=1 --config profile=my/profile.yaml seeds=[7,8,9]   # or seed=7: one seed
import re
import sys
from pathlib import Path

from snakemake.utils import min_version

min_version("8.0")

try:
    import attnlab.check
    import attnlab.cluster
    import attnlab.config
    from attnlab.errors import AttnlabError
except ImportError:
    sys.exit("attnlab: error: the attnlab package is not importable; run `pip install -e .` first")


try:  # one clear line naming the problem, before any job starts; nothing is written here
    config = attnlab.check.check(attnlab.config.chosen(config, workflow.overwrite_configfiles))  # results/ too
except AttnlabError as err:
    sys.exit(f"attnlab: error: {err}")

PROFILE = config["profile"]
R = f"results/{PROFILE}"
LOGS = f"{R}/logs"


onstart:  # a real run (not a dry one), before its first job
    expected_time(missing())
    try:
        if workflow.executor_plugin.name == "slurm":  # resources the plugin would silently drop
            res = workflow.resource_settings
            attnlab.cluster.check_resources(res.default_resources or {}, dict(res.overwrite_resources),
                                            {r.name for r in workflow.rules})
        attnlab.check.check_results(R, write=True)
    except AttnlabError as err:
        sys.exit(f"attnlab: error: {err}")


report: "workflow/report/workflow.rst"  # `snakemake --report report.zip`: what it holds and how it is laid out


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/analyses.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/report.smk"

# A dry run has no hook of its own (onstart is a real run's) and Snakemake tells the Snakefile nothing of -n while
# it reads it: its command line does.
if any(re.fullmatch(r"-[A-Za-z]*n[A-Za-z]*|--dry-?run", arg) for arg in sys.argv[1:]):
    expected_time(missing())


rule all:
    default_target: True
    input:
        rules.site.output.index,
        rules.claims.output.by_seed,  # read by no rule: named here so that a lost one is rebuilt
        rules.charts.output.charts,  # read by no rule: the charts `snakemake --report` holds
        # every run file by name, so that deleting one rebuilds it even though the site is up to date
        **RUNS,
