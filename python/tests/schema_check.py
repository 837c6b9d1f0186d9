"""Validation against the JSON Schemas in schemas/ for the tests, with the standard library
only: the draft-07 subset those schemas use ($ref to #/definitions, type, const, enum,
required, properties, additionalProperties, items, minItems, minLength, pattern, minimum,
exclusiveMinimum, allOf, if/then). Where the jsonschema package is importable, the tests
also run it on the same documents."""

import json
import os
import re

SCHEMAS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "schemas")
_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def load(name):
    with open(os.path.join(SCHEMAS, name), encoding="utf-8") as f:
        return json.load(f)


def _is(value, t):
    if t == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if t == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, _TYPES[t])


def _errors(value, schema, root, path):
    if "$ref" in schema:
        node = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            node = node[part]
        return _errors(value, node, root, path)
    out = []
    types = schema.get("type")
    if types is not None:
        types = types if isinstance(types, list) else [types]
        if not any(_is(value, t) for t in types):
            return ["%s: is not of type %s" % (path, " or ".join(types))]
    if "const" in schema and value != schema["const"]:
        out.append("%s: is not %s" % (path, json.dumps(schema["const"])))
    if "enum" in schema and value not in schema["enum"]:
        out.append("%s: %s is not one of %s" % (path, json.dumps(value), schema["enum"]))
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                out.append("%s: missing required field '%s'" % (path, key))
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, sub in value.items():
            if key in props:
                out += _errors(sub, props[key], root, "%s.%s" % (path, key))
            elif extra is False:
                out.append("%s: unexpected field '%s'" % (path, key))
            elif isinstance(extra, dict):
                out += _errors(sub, extra, root, "%s.%s" % (path, key))
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            out.append("%s: fewer than %d items" % (path, schema["minItems"]))
        if "items" in schema:
            for i, item in enumerate(value):
                out += _errors(item, schema["items"], root, "%s[%d]" % (path, i))
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            out.append("%s: shorter than %d" % (path, schema["minLength"]))
        if "pattern" in schema and not re.search(schema["pattern"], value):
            out.append("%s: %s does not match %s" % (path, json.dumps(value), schema["pattern"]))
    if _is(value, "number"):
        if "minimum" in schema and value < schema["minimum"]:
            out.append("%s: below %s" % (path, schema["minimum"]))
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            out.append("%s: not above %s" % (path, schema["exclusiveMinimum"]))
    for sub in schema.get("allOf", []):
        out += _errors(value, sub, root, path)
    if "if" in schema and not _errors(value, schema["if"], root, path) and "then" in schema:
        out += _errors(value, schema["then"], root, path)
    return out


def errors(document, schema_name):
    """Every violation of schemas/<schema_name> by `document`, as 'schema: $.path: why'."""
    schema = load(schema_name)
    found = ["%s: %s" % (schema_name, e) for e in _errors(document, schema, schema, "$")]
    try:
        import jsonschema
    except ImportError:
        return found
    validator = jsonschema.Draft7Validator(schema)
    found += ["%s (jsonschema): %s" % (schema_name, e.message) for e in validator.iter_errors(document)]
    return found
