# attnlab: tokenise tiny Shakespeare, train every variant, evaluate, check the chapter's claims, build the site.
#   snakemake --cores 4 --resources gpu=1                                   # the quick profile
#   snakemake --cores 4 --resources gpu=1 --configfile config/chapter.yaml  # the chapter's exact settings
import sys
from pathlib import Path

import yaml
from snakemake.utils import min_version, validate

min_version("8.0")

if not config:  # no --configfile: the quick profile (a CPU laptop, well under an hour)
    config.update(yaml.safe_load(Path("config/quick.yaml").read_text()))

try:
    import attnlab.config
    from attnlab.errors import AttnlabError
except ImportError:
    sys.exit("attnlab: error: the attnlab package is not importable; run `pip install -e .` first")
try:  # one clear line naming the problem, before any job starts
    config = attnlab.config.validate(config)
    if config["data"]["path"]:  # a local corpus is checked now (a download is checked when it lands)
        from attnlab.data.corpus import read_text

        read_text(Path(config["data"]["path"]), config["data"]["sha256"])
except AttnlabError as err:
    sys.exit(f"attnlab: error: {err}")
validate(config, "src/attnlab/schemas/config.schema.yaml")

PROFILE = config["profile"]
R = f"results/{PROFILE}"
LOGS = f"{R}/logs"
# The resolved profile the jobs read. It is not an input of any rule: each rule passes the settings it
# depends on as params, so editing one setting reruns only what it touches.
CONFIG = f"{R}/config.yaml"
_resolved = yaml.safe_dump(config, sort_keys=False)
if not Path(CONFIG).exists() or Path(CONFIG).read_text() != _resolved:
    Path(CONFIG).parent.mkdir(parents=True, exist_ok=True)
    Path(CONFIG).write_text(_resolved)


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/analyses.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/bench.smk"
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        rules.site.output.index,
        rules.bench_throughput.output.json,
