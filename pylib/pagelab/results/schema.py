"""The JSON Schema of every `--json` document (the JSON contract), kept as package data."""

import json
from importlib import resources


def json_schema():
    """The JSON Schema (draft 2020-12) that every ``pagelab ... --json`` document follows: one
    definition per command under ``$defs`` (doctor, result, run_all, stat, sim_trace, cachelab);
    the whole schema accepts any of them. Validate class results with it before comparing."""
    return json.loads(resources.files(__package__).joinpath("schema.json").read_text())
