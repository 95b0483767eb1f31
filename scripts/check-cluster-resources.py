#!/usr/bin/env python3
"""Validates the cluster resources docs/drill.md describes (docs/cluster/*.yaml).

Chaos Mesh and Litmus resources are checked against their projects' published CRD schemas,
vendored under crates/probity-drill/tests/testdata/chaos-mesh and .../litmus (their sources are
in SOURCE.md there), offline and strictly:
an unknown field is an error, as the API server's strict field validation (`kubectl apply
--validate=strict`) makes it, although the schemas themselves leave objects open. Kubernetes'
own kinds are checked with kubernetes-validate --strict.

    target/venv/bin/python scripts/check-cluster-resources.py [FILE...]

Exit 0 when every document is valid; 1 with one line per error (file, document, path, message).
"""

import copy
import pathlib
import sys

import jsonschema
import kubernetes_validate
import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCHEMAS = [
    ROOT / "crates/probity-drill/tests/testdata/chaos-mesh",
    ROOT / "crates/probity-drill/tests/testdata/litmus",
]
KUBERNETES_VERSION = "1.33"


def strict(schema):
    """The schema with every object closed to fields it does not name (unless the schema says
    unknown fields are preserved)."""
    schema = copy.deepcopy(schema)

    def close(node):
        if isinstance(node, dict):
            if (
                node.get("type") == "object"
                and "properties" in node
                and "additionalProperties" not in node
                and not node.get("x-kubernetes-preserve-unknown-fields")
            ):
                node["additionalProperties"] = False
            for value in node.values():
                close(value)
        elif isinstance(node, list):
            for value in node:
                close(value)

    close(schema)
    return schema


def crd_schemas():
    """(group/version, kind) → the strict JSON schema of the whole object."""
    found = {}
    for path in sorted(p for folder in SCHEMAS for p in folder.glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        group = crd["spec"]["group"]
        kind = crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            schema = strict(version["schema"]["openAPIV3Schema"])
            # What the API server requires of every object.
            schema.setdefault("required", [])
            schema["required"] += ["apiVersion", "kind", "metadata"]
            found[(f"{group}/{version['name']}", kind)] = schema
    return found


def check(path, schemas):
    errors = []
    documents = [d for d in yaml.safe_load_all(pathlib.Path(path).read_text()) if d is not None]
    if not documents:
        errors.append(f"{path}: no resource")
    for index, document in enumerate(documents):
        where = f"{path}[{index}]"
        if not isinstance(document, dict) or "kind" not in document:
            errors.append(f"{where}: not a Kubernetes object")
            continue
        if not document.get("metadata", {}).get("name"):
            errors.append(f"{where}: metadata.name is required")
        key = (document.get("apiVersion"), document["kind"])
        groups = {version.split("/")[0] for version, _ in schemas}
        if key[0] and key[0].split("/")[0] in groups:
            schema = schemas.get(key)
            if schema is None:
                errors.append(f"{where}: no vendored schema for {key[1]} {key[0]}")
                continue
            validator = jsonschema.Draft7Validator(schema)
            for error in sorted(validator.iter_errors(document), key=lambda e: list(e.path)):
                at = ".".join(str(p) for p in error.path) or "(root)"
                errors.append(f"{where} {key[1]}: {at}: {error.message}")
        else:
            try:
                kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)
            except kubernetes_validate.ValidationError as error:
                at = ".".join(str(p) for p in error.path) or "(root)"
                errors.append(f"{where} {key[1]}: {at}: {error.message}")
            except kubernetes_validate.SchemaNotFoundError as error:
                errors.append(f"{where} {key[1]}: {error}")
    return errors


def main(argv):
    files = argv[1:] or sorted(str(p) for p in (ROOT / "docs/cluster").glob("*.yaml"))
    schemas = crd_schemas()
    errors = [error for path in files for error in check(path, schemas)]
    for error in errors:
        print(error)
    if not errors:
        print(f"{len(files)} files valid")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
