"""One module per registered experiment (attnlab.settings.<name>), without torch: SCHEMA, the JSON schema of its
profile section (None: it has none); DEFAULTS, what the section holds beyond the schema's defaults (a training
experiment's runs); and, where it has any, check(cfg) and check_split(cfg, n_train, n_val, at_most)."""
