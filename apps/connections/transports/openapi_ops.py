"""An OpenAPI document's operations as MCP tools: names, flattened input schemas, output schemas,
annotations, filters. Pure (no I/O): the document arrives validated and with its remote `$ref`s
already inlined by the catalog (apps/catalog/openapi.py); local `$ref`s are resolved here.

Swagger 2.0, OpenAPI 3.0 and 3.1 are read into one shape (`Operation`); 3.0's `nullable` becomes a
JSON Schema type list, so every schema a tool shows is plain JSON Schema (2020-12).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
MAX_NAME = 64
# Recursive schemas (a Node with children Nodes) are cut at this depth: a tool's schema is shown to
# an LLM, and deeper levels of the same shape tell it nothing new.
MAX_DEPTH = 8
# A schema is shown to the model in every tools/list and counts against the user's token budget:
# one much larger than this is rebuilt shallower (4, then 2 levels), an output schema dropped.
DEPTHS = (MAX_DEPTH, 4, 2)
MAX_INPUT_SCHEMA = 16_000  # characters of JSON
MAX_OUTPUT_SCHEMA = 8_000
_DROP = frozenset({"xml", "externalDocs", "example", "discriminator", "x-examples"})
_PARAM_SCHEMA_KEYS = (
    "type",
    "format",
    "items",
    "enum",
    "default",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "uniqueItems",
    "multipleOf",
)


class DocumentProblem(ValueError):
    """The document cannot be turned into tools; the message names where."""


@dataclass(frozen=True)
class Param:
    argument: str  # the name in the tool's arguments
    name: str  # the name on the wire
    location: str  # path, query, header, cookie, body (the whole body), form
    required: bool
    style: str = ""
    explode: bool | None = None


@dataclass
class Operation:
    tool: str
    method: str
    path: str
    operation_id: str
    tags: list[str]
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    params: list[Param]
    body_type: str  # "", "json", "form", "multipart"
    security: list[dict[str, list[str]]] | None
    wrapped_output: bool = (
        False  # the 2xx schema is not an object: the result sits in {"result": …}
    )
    annotations: dict[str, Any] = field(default_factory=dict)
    validator: Any = field(default=None, repr=False, compare=False)  # set by the transport
    output_validator: Any = field(default=None, repr=False, compare=False)


class Resolver:
    """Local `$ref`s of one document, inlined with cycles and depth bounded."""

    def __init__(
        self, document: Mapping[str, Any], *, openapi30: bool, max_depth: int = MAX_DEPTH
    ) -> None:
        self.document = document
        self.openapi30 = openapi30
        self.max_depth = max_depth

    def pointer(self, ref: str) -> Any:
        if not ref.startswith("#"):
            raise DocumentProblem(f"$ref {ref!r}: only local references are left at this point")
        node: Any = self.document
        for raw in ref[1:].lstrip("/").split("/") if ref not in ("#", "#/") else []:
            part = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            elif isinstance(node, Mapping) and part in node:
                node = node[part]
            else:
                raise DocumentProblem(f"$ref {ref!r} points nowhere (no {part!r})")
        return node

    def deref(self, node: Any, seen: tuple[str, ...] = ()) -> Any:
        """`node` itself, or what its `$ref` chain ends at (for parameters, bodies, responses)."""
        while isinstance(node, Mapping) and isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            if ref in seen or len(seen) > MAX_DEPTH:
                raise DocumentProblem(f"$ref {ref!r} refers to itself")
            seen = (*seen, ref)
            node = self.pointer(ref)
        return node

    def schema(self, node: Any, seen: tuple[str, ...] = (), depth: int = 0) -> Any:
        """A JSON Schema with every `$ref` inlined (a cycle or the depth limit ends in `{}`)."""
        if isinstance(node, list):
            return [self.schema(item, seen, depth) for item in node]
        if not isinstance(node, Mapping):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str):
            if ref in seen or depth >= self.max_depth:
                why = "recursive" if ref in seen else "nested too deep"
                return {"description": f"({why}: {ref.rsplit('/', 1)[-1]})"}
            target = self.schema(self.pointer(ref), (*seen, ref), depth + 1)
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            return {**target, **self.schema(siblings, seen, depth)} if siblings else target
        out = {
            key: self.schema(value, seen, depth + 1)
            for key, value in node.items()
            if key not in _DROP and not key.startswith("x-")
        }
        if self.openapi30 and out.pop("nullable", False) is True and "type" in out:
            kind = out["type"]
            out["type"] = [*(kind if isinstance(kind, list) else [kind]), "null"]
        return out


def version_of(document: Mapping[str, Any]) -> str:
    if str(document.get("swagger", "")).startswith("2"):
        return "2.0"
    found = str(document.get("openapi", ""))
    if found.startswith("3.0"):
        return "3.0"
    if found.startswith(("3.1", "3.2")):
        return "3.1"
    raise DocumentProblem("not an OpenAPI document: no 'openapi: 3.x' or 'swagger: \"2.0\"' field")


def operations(
    document: Mapping[str, Any], *, include: Iterable[str] = (), exclude: Iterable[str] = ()
) -> list[Operation]:
    """Every operation the filters let through, as a tool; tool names unique within the document."""
    version = version_of(document)
    resolver = Resolver(document, openapi30=version != "3.1")
    include, exclude = list(include), list(exclude)
    found: list[Operation] = []
    taken: set[str] = set()
    for path, item in (document.get("paths") or {}).items():
        item = resolver.deref(item)
        if not isinstance(item, Mapping):
            continue
        shared = list(item.get("parameters") or [])
        for method in METHODS:
            spec = item.get(method)
            if not isinstance(spec, Mapping):
                continue
            where = f"paths.{path}.{method}"
            if not _selected(spec, method, path, include, exclude):
                continue
            try:
                op = _sized_operation(document, version, path, method, spec, shared)
            except DocumentProblem as exc:
                raise DocumentProblem(f"{where}: {exc}") from None
            op.tool = _unique(op.tool, taken)
            taken.add(op.tool)
            found.append(op)
    return found


def _sized_operation(
    document: Mapping[str, Any],
    version: str,
    path: str,
    method: str,
    spec: Mapping[str, Any],
    shared: list[Any],
) -> Operation:
    """The operation with schemas inlined as deep as their size allows (see DEPTHS)."""
    for depth in DEPTHS:
        resolver = Resolver(document, openapi30=version != "3.1", max_depth=depth)
        op = _operation(document, resolver, version, path, method, spec, shared)
        if _size(op.input_schema) <= MAX_INPUT_SCHEMA:
            break
    for depth in DEPTHS[1:]:
        if op.output_schema is None or _size(op.output_schema) <= MAX_OUTPUT_SCHEMA:
            break
        resolver = Resolver(document, openapi30=version != "3.1", max_depth=depth)
        op.output_schema, op.wrapped_output = _output(resolver, version, spec)
    if op.output_schema is not None and _size(op.output_schema) > MAX_OUTPUT_SCHEMA:
        op.output_schema, op.wrapped_output = None, False
    return op


def _size(schema: Any) -> int:
    return len(json.dumps(schema, separators=(",", ":")))


def _selected(
    spec: Mapping[str, Any], method: str, path: str, include: list[str], exclude: list[str]
) -> bool:
    facts = {
        "tag": [str(t) for t in spec.get("tags") or []],
        "method": [method.upper()],
        "path": [path],
        "operation": [str(spec.get("operationId") or "")],
    }
    if include and not any(_matches(rule, facts) for rule in include):
        return False
    return not any(_matches(rule, facts) for rule in exclude)


def filter_problem(rule: str) -> str:
    """Why a filter rule cannot be used ('' if it can): `tag:NAME`, `method:GET`, `path:/pets/*`,
    `operation:listPets` (`*` matches any run of characters)."""
    kind, sep, pattern = rule.partition(":")
    if not sep or kind not in ("tag", "method", "path", "operation") or not pattern:
        return (
            f"{rule!r}: write tag:NAME, method:GET, path:/pets/* or operation:ID "
            "('*' matches any run of characters)"
        )
    return ""


def _matches(rule: str, facts: Mapping[str, list[str]]) -> bool:
    kind, _, pattern = rule.partition(":")
    fold = kind in ("method", "tag")
    return any(glob(pattern, value, fold=fold) for value in facts.get(kind, []))


def glob(pattern: str, text: str, *, fold: bool = False) -> bool:
    """`*` matches any run of characters; linear in the text (no backtracking regex engine)."""
    if fold:
        pattern, text = pattern.lower(), text.lower()
    parts = pattern.split("*")
    if len(parts) == 1:
        return pattern == text
    first, last = parts[0], parts[-1]
    if not text.startswith(first) or not text.endswith(last) or len(first) + len(last) > len(text):
        return False
    at, end = len(first), len(text) - len(last)
    for middle in parts[1:-1]:
        found = text.find(middle, at, end)
        if found < 0:
            return False
        at = found + len(middle)
    return True


def tool_name(operation_id: str, method: str, path: str) -> str:
    """`operationId`, else `get_pets_petId`: within `^[A-Za-z0-9_-]{1,64}$`."""
    raw = operation_id or f"{method}{path}"
    # One `_` per run: `__` separates a server's name from a tool's in the hub's prefixed names.
    name = re.sub(r"[^A-Za-z0-9-]+", "_", raw).strip("_") or method
    return name[:MAX_NAME]


def _unique(name: str, taken: set[str]) -> str:
    candidate, n = name, 2
    while candidate in taken:
        suffix = f"_{n}"
        candidate, n = name[: MAX_NAME - len(suffix)] + suffix, n + 1
    return candidate


def _operation(
    document: Mapping[str, Any],
    resolver: Resolver,
    version: str,
    path: str,
    method: str,
    spec: Mapping[str, Any],
    shared: list[Any],
) -> Operation:
    params = _merged_params(resolver, shared, list(spec.get("parameters") or []))
    properties: dict[str, Any] = {}
    required: list[str] = []
    wire: list[Param] = []
    body_schema, body_type, body_required = _body(resolver, version, spec, params, document)
    for p in params:
        location = p.get("in")
        if location not in ("path", "query", "header", "cookie"):
            continue
        name = str(p.get("name") or "")
        if not name:
            raise DocumentProblem("a parameter has no name")
        argument = _argument_name(name, location, properties)
        schema = _param_schema(resolver, version, p)
        properties[argument] = schema
        is_required = bool(p.get("required")) or location == "path"
        if is_required:
            required.append(argument)
        # Arrays in a query: repeated (`?a=1&a=2`) unless the document asks for one joined value.
        explode = p.get("collectionFormat") == "multi" if version == "2.0" else p.get("explode")
        wire.append(Param(argument, name, location, is_required, p.get("style", ""), explode))
    if body_schema is not None:
        wire += _flatten_body(body_schema, body_type, body_required, properties, required)
    input_schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        input_schema["required"] = required
    output, wrapped = _output(resolver, version, spec)
    description = "\n\n".join(
        str(part).strip() for part in (spec.get("summary"), spec.get("description")) if part
    )
    operation_id = str(spec.get("operationId") or "")
    return Operation(
        tool=tool_name(operation_id, method, path),
        method=method.upper(),
        path=path,
        operation_id=operation_id,
        tags=[str(t) for t in spec.get("tags") or []],
        description=description or f"{method.upper()} {path}",
        input_schema=input_schema,
        output_schema=output,
        params=wire,
        body_type=body_type,
        security=_security(spec, document),
        wrapped_output=wrapped,
        annotations=annotations_for(method, spec.get("summary")),
    )


def annotations_for(method: str, title: Any = None) -> dict[str, Any]:
    """GET/HEAD read only; DELETE destructive; PUT idempotent (MCP's hints, from HTTP's semantics)."""
    method = method.lower()
    hints: dict[str, Any] = {"openWorldHint": True}
    if title:
        hints["title"] = str(title)[:200]
    if method in ("get", "head", "options"):
        hints["readOnlyHint"] = True
    else:
        hints["readOnlyHint"] = False
        hints["destructiveHint"] = method == "delete"
        hints["idempotentHint"] = method in ("put", "delete")
    return hints


def _merged_params(resolver: Resolver, shared: list[Any], own: list[Any]) -> list[Mapping]:
    merged: dict[tuple[str, str], Mapping] = {}
    for raw in [*shared, *own]:  # an operation's own parameter overrides the path's
        p = resolver.deref(raw)
        if isinstance(p, Mapping):
            merged[(str(p.get("name")), str(p.get("in")))] = p
    return list(merged.values())


def _argument_name(name: str, location: str, taken: Mapping[str, Any]) -> str:
    return name if name not in taken else f"{location}_{name}"


def _param_schema(resolver: Resolver, version: str, p: Mapping[str, Any]) -> dict[str, Any]:
    if version == "2.0" or "schema" not in p:
        schema = {k: p[k] for k in _PARAM_SCHEMA_KEYS if k in p}
        if schema.get("type") == "file":
            schema = {"type": "string", "description": "file content"}
    else:
        schema = dict(resolver.schema(p["schema"]))
        if "schema" not in p and "content" in p:
            schema = {}
    schema = resolver.schema(schema)
    if p.get("description") and "description" not in schema:
        schema["description"] = str(p["description"])
    return schema


def _body(
    resolver: Resolver,
    version: str,
    spec: Mapping[str, Any],
    params: list[Mapping],
    document: Mapping[str, Any],
) -> tuple[dict[str, Any] | None, str, bool]:
    if version == "2.0":
        return _body_v2(resolver, spec, params, document)
    body = resolver.deref(spec.get("requestBody"))
    if not isinstance(body, Mapping):
        return None, "", False
    content = body.get("content") or {}
    for media, kind in (
        ("application/json", "json"),
        ("application/x-www-form-urlencoded", "form"),
        ("multipart/form-data", "multipart"),
    ):
        chosen = _media(content, media)
        if chosen is not None:
            schema = resolver.schema(chosen.get("schema") or {})
            return schema, kind, bool(body.get("required"))
    return None, "", False  # a body only in a form we cannot build (XML, octet-stream): not offered


def _media(content: Mapping[str, Any], wanted: str) -> Mapping[str, Any] | None:
    for media, value in content.items():
        base = media.split(";")[0].strip().lower()
        if base == wanted or (wanted == "application/json" and base.endswith("+json")):
            return value if isinstance(value, Mapping) else {}
    if wanted == "application/json" and "*/*" in content:
        return content["*/*"] if isinstance(content["*/*"], Mapping) else {}
    return None


def _body_v2(
    resolver: Resolver, spec: Mapping[str, Any], params: list[Mapping], document: Mapping[str, Any]
) -> tuple[dict[str, Any] | None, str, bool]:
    for p in params:
        if p.get("in") == "body":
            return resolver.schema(p.get("schema") or {}), "json", bool(p.get("required"))
    form = [p for p in params if p.get("in") == "formData"]
    if not form:
        return None, "", False
    consumes = spec.get("consumes") or document.get("consumes") or []
    kind = "multipart" if "multipart/form-data" in consumes else "form"
    schema = {
        "type": "object",
        "properties": {str(p["name"]): _param_schema(resolver, "2.0", p) for p in form},
    }
    needed = [str(p["name"]) for p in form if p.get("required")]
    if needed:
        schema["required"] = needed
    return schema, kind, bool(needed)


def _flatten_body(
    schema: dict[str, Any],
    body_type: str,
    body_required: bool,
    properties: dict[str, Any],
    required: list[str],
) -> list[Param]:
    """An object body's properties become top-level arguments when no parameter has their name;
    otherwise (or for a non-object body) the body is one argument, `body`."""
    props = schema.get("properties") if isinstance(schema.get("properties"), Mapping) else None
    if props and schema.get("type") in ("object", None) and not set(props) & set(properties):
        needed = set(schema.get("required") or []) if body_required else set()
        for name, sub in props.items():
            properties[name] = sub
            if name in needed:
                required.append(name)
        return [
            Param(name, name, "form" if body_type != "json" else "json", name in needed)
            for name in props
        ]
    argument = "body" if "body" not in properties else "request_body"
    properties[argument] = schema or {"description": "request body"}
    if body_required:
        required.append(argument)
    return [Param(argument, argument, "body", body_required)]


def _output(
    resolver: Resolver, version: str, spec: Mapping[str, Any]
) -> tuple[dict[str, Any] | None, bool]:
    responses = spec.get("responses") or {}
    for code in sorted(str(c) for c in responses):
        if not code.startswith("2"):
            continue
        response = resolver.deref(
            responses.get(code, responses.get(int(code) if code.isdigit() else code))
        )
        if not isinstance(response, Mapping):
            continue
        if version == "2.0":
            raw = response.get("schema")
        else:
            media = _media(response.get("content") or {}, "application/json")
            raw = media.get("schema") if media is not None else None
        if not isinstance(raw, Mapping):
            return None, False
        schema = resolver.schema(raw)
        if schema.get("type") == "object" or (schema.get("properties") and "type" not in schema):
            return {**schema, "type": "object"}, False
        return {"type": "object", "properties": {"result": schema}, "required": ["result"]}, True
    return None, False


def _security(
    spec: Mapping[str, Any], document: Mapping[str, Any]
) -> list[dict[str, list[str]]] | None:
    chosen = spec["security"] if "security" in spec else document.get("security")
    if not isinstance(chosen, list):
        return None
    return [dict(req) for req in chosen if isinstance(req, Mapping)]


def security_schemes(document: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Scheme name → its definition, in 3.x's shape (2.0's `securityDefinitions` translated)."""
    if version_of(document) != "2.0":
        found = (document.get("components") or {}).get("securitySchemes") or {}
        resolver = Resolver(document, openapi30=False)
        return {str(k): dict(resolver.deref(v)) for k, v in found.items()}
    out: dict[str, dict[str, Any]] = {}
    for name, scheme in (document.get("securityDefinitions") or {}).items():
        kind = scheme.get("type")
        if kind == "basic":
            out[str(name)] = {"type": "http", "scheme": "basic"}
        elif kind == "apiKey":
            out[str(name)] = {"type": "apiKey", "in": scheme.get("in"), "name": scheme.get("name")}
        elif kind == "oauth2":
            flow = {"application": "clientCredentials", "accessCode": "authorizationCode"}.get(
                scheme.get("flow", ""), scheme.get("flow", "")
            )
            out[str(name)] = {
                "type": "oauth2",
                "flows": {
                    flow: {
                        k: scheme[k]
                        for k in ("tokenUrl", "authorizationUrl", "scopes")
                        if k in scheme
                    }
                },
            }
    return out


def base_url(document: Mapping[str, Any], source: str = "") -> str:
    """The API's base URL the document names (server variables at their defaults), made absolute
    against the URL the document came from; '' when it names none and has no source."""
    from urllib.parse import urljoin

    if version_of(document) == "2.0":
        host = document.get("host")
        schemes = document.get("schemes") or []
        base_path = str(document.get("basePath") or "")
        if host:
            scheme = "https" if "https" in schemes or not schemes else schemes[0]
            return f"{scheme}://{host}{base_path}".rstrip("/")
        return urljoin(source, base_path or "/").rstrip("/") if source else ""
    servers = document.get("servers") or []
    if not servers or not isinstance(servers[0], Mapping):
        return urljoin(source, "/").rstrip("/") if source else ""
    url = str(servers[0].get("url") or "/")
    for name, var in (servers[0].get("variables") or {}).items():
        url = url.replace("{" + str(name) + "}", str((var or {}).get("default", "")))
    return (urljoin(source, url) if source else url).rstrip("/")
