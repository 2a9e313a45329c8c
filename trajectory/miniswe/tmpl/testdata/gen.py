"""Renders cases.json's templates with the real jinja2 (run with a
mini-swe-agent venv's python: go test ./trajectory/miniswe/tmpl -update)
and writes the results into golden.json."""
import json
import sys

from jinja2 import StrictUndefined, Template

cases = json.load(open(sys.argv[1]))
out = []
for c in cases:
    for i, v in enumerate(c["vars"]):
        try:
            got = {"want": Template(c["template"], undefined=StrictUndefined).render(**v)}
        except Exception as e:  # noqa: BLE001
            got = {"error": type(e).__name__}
        out.append({"name": f'{c["name"]}/{i}', "template": c["template"], "vars": v, **got})
json.dump(out, open(sys.argv[2], "w"), indent=1, ensure_ascii=False)
