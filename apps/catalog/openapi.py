"""OpenAPI documents of `openapi` servers: fetched, parsed, bundled and validated before they are stored.

Validation uses `openapi-spec-validator` (python-openapi): it checks Swagger 2.0, OpenAPI 3.0, 3.1
and 3.2 against their official JSON Schemas plus the rules those cannot express (path parameters
declared, unique operationIds, defaults matching their schema), and each error carries a JSON path,
so a bad document is reported where it is wrong. `openapi-core` validates requests and responses
against a document — more than a catalog needs, and it would run on the worker's hot path; `prance`
resolves references but fetches remote ones itself (no outbound policy) and its validation is the
same validator underneath. Remote `$ref`s are therefore resolved here, each fetch through the
hub's outbound address policy (apps/core/outbound.py) when a non-staff user chose the document,
bounded in count and depth, then the validator sees a document with local references only.
Parsing: JSON, or YAML with PyYAML's safe loader.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urldefrag, urljoin

import httpx2
import yaml
from django.core.exceptions import ValidationError

from apps.connections.transports import openapi_ops
from apps.core import outbound

MAX_DOCUMENT = 25_000_000  # bytes of one fetched document (GitHub's REST description is ~12 MB)
MAX_REMOTE = 20  # other documents a document may pull in through $refs
MAX_REF_DEPTH = 32
FETCH_TIMEOUT = 20.0


class DocumentError(ValueError):
    """What is wrong with a document, for the person who registered it."""


@dataclass(frozen=True)
class Loaded:
    document: dict[str, Any]
    text: str  # the bundled document as stored (compact JSON)
    base_url: str  # from the document's servers / host, '' when it names none


def parse(text: str, *, where: str = "the document") -> dict[str, Any]:
    """JSON or YAML text → a mapping; an error names the line."""
    stripped = text.lstrip()
    try:
        data = json.loads(text) if stripped.startswith("{") else yaml.load(text, _Loader)
    except json.JSONDecodeError as exc:
        raise DocumentError(
            f"{where} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise DocumentError(f"{where} is not valid YAML or JSON: {problem}{at}") from None
    if not isinstance(data, dict):
        raise DocumentError(f"{where} is not an OpenAPI document (not a mapping at the top)")
    return data


class _Loader(yaml.SafeLoader):
    """Safe YAML whose dates stay text (OpenAPI values are JSON; `2024-01-01` is a string)."""


_Loader.yaml_implicit_resolvers = {
    key: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def fetch(url: str, *, public_only: bool) -> str:
    """The text at `url` (under the outbound policy when `public_only`), or a DocumentError."""
    kwargs: dict[str, Any] = {"timeout": FETCH_TIMEOUT, "follow_redirects": True}
    try:
        client = (
            outbound.guarded_client(outbound.PUBLIC_ONLY, **kwargs)
            if public_only
            else httpx2.Client(**kwargs)
        )
        with client, client.stream("GET", url, headers={"Accept": _ACCEPT}) as response:
            body = b""
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > MAX_DOCUMENT:
                    raise DocumentError(f"{url}: larger than {MAX_DOCUMENT:,} bytes")
    except httpx2.HTTPError as exc:
        raise DocumentError(f"cannot fetch {url}: {exc}") from None
    if response.status_code != 200:
        raise DocumentError(f"cannot fetch {url}: HTTP {response.status_code}")
    return body.decode(response.encoding or "utf-8", "replace")


_ACCEPT = "application/json, application/yaml, application/vnd.oai.openapi+json, text/yaml, */*"


def load(*, source: str = "", text: str = "", public_only: bool) -> Loaded:
    """The document at `source` (a URL) or in `text`, bundled and validated."""
    if not text:
        if not source:
            raise DocumentError("give the document: a URL to fetch it from, or its text")
        text = fetch(source, public_only=public_only)
    document = parse(text)
    bundled = _Bundler(source, public_only).bundle(document)
    validate(bundled)
    return Loaded(
        bundled,
        json.dumps(bundled, separators=(",", ":"), sort_keys=False),
        openapi_ops.base_url(bundled, source),
    )


def validate(document: Mapping[str, Any]) -> None:
    """The document is OpenAPI 2.0/3.x and every operation becomes a tool; else DocumentError naming where."""
    from openapi_spec_validator.validation.exceptions import OpenAPIValidationError

    try:
        openapi_ops.version_of(document)
    except openapi_ops.DocumentProblem as exc:
        raise DocumentError(str(exc)) from None
    _check_refs(document, openapi_ops.Resolver(document, openapi30=False), "$")
    try:
        _validate_spec(document)
    except OpenAPIValidationError as exc:
        where = getattr(exc, "json_path", "") or "$"
        if where == "$":  # some checks (defaults, path parameters) lose their place: find it
            where = _failing_operation(document) or where
        raise DocumentError(f"invalid at {where}: {exc.message.splitlines()[0]}") from None
    except Exception as exc:  # boundary: the validator's own failures
        raise DocumentError(f"cannot validate the document: {exc}") from None
    try:
        openapi_ops.operations(document)
    except openapi_ops.DocumentProblem as exc:
        raise DocumentError(str(exc)) from None


def _check_refs(node: Any, resolver: openapi_ops.Resolver, where: str) -> None:
    """Every local `$ref` points somewhere; else DocumentError naming the reference's place."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            _check_refs(item, resolver, f"{where}[{i}]")
    elif isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            try:
                resolver.pointer(ref)
            except openapi_ops.DocumentProblem as exc:
                raise DocumentError(f"invalid at {where}: {exc}") from None
        for key, value in node.items():
            if isinstance(value, dict | list):
                _check_refs(value, resolver, f"{where}.{key}")


def _validate_spec(document: Mapping[str, Any]) -> None:
    """openapi-spec-validator's checks for the document's version, but for one: a `default` that
    does not fit its own schema is let through. Published documents carry such defaults often
    (drf-spectacular writes `default: ""` beside `minLength: 1`), and a tool shows the default
    to the model as it is; refusing the whole API for it would help nobody."""
    from openapi_spec_validator import (
        OpenAPIV2SpecValidator,
        OpenAPIV30SpecValidator,
        OpenAPIV31SpecValidator,
        OpenAPIV32SpecValidator,
    )

    version = str(document.get("openapi") or "")
    base = (
        OpenAPIV2SpecValidator
        if str(document.get("swagger", "")).startswith("2")
        else OpenAPIV32SpecValidator
        if version.startswith("3.2")
        else OpenAPIV31SpecValidator
        if version.startswith("3.1")
        else OpenAPIV30SpecValidator
    )
    lenient = type(
        f"Lenient{base.__name__}",
        (base,),
        {"keyword_validators": {**base.keyword_validators, "default": _AnyDefault}},
    )
    lenient(dict(document)).validate()


class _AnyDefault:
    def __init__(self, registry: Any) -> None:
        self.registry = registry

    def __call__(self, schema: Any, value: Any) -> Any:
        return iter(())


MAX_LOCATED = 300  # operations validated one by one to find where an error without a place is


def _failing_operation(document: Mapping[str, Any]) -> str:
    """The first operation that fails validation on its own (`$.paths./a/{id}.get`), or ''."""
    paths = document.get("paths") or {}
    if sum(len(item) for item in paths.values() if isinstance(item, dict)) > MAX_LOCATED:
        return ""
    for path, item in paths.items():
        for method, operation in (item or {}).items() if isinstance(item, dict) else ():
            alone = {**document, "paths": {path: {method: operation}}}
            if isinstance(item.get("parameters"), list):
                alone["paths"][path]["parameters"] = item["parameters"]
            try:
                _validate_spec(alone)
            except Exception:  # boundary: any failure of this operation alone names it
                return f"$.paths.{path}.{method}"
    return ""


class _Bundler:
    """Inlines remote `$ref`s (`other.yaml#/Pet`, `https://…`), each document fetched once."""

    def __init__(self, source: str, public_only: bool) -> None:
        self.source = source
        self.public_only = public_only
        self.documents: dict[str, dict[str, Any]] = {}

    def bundle(self, document: dict[str, Any]) -> dict[str, Any]:
        return self._walk(document, base="", root=document, depth=0)

    def _walk(self, node: Any, *, base: str, root: dict[str, Any], depth: int) -> Any:
        if isinstance(node, list):
            return [self._walk(n, base=base, root=root, depth=depth) for n in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and (base or not ref.startswith("#")):
            return self._inline(ref, base=base, root=root, depth=depth)
        return {k: self._walk(v, base=base, root=root, depth=depth) for k, v in node.items()}

    def _inline(self, ref: str, *, base: str, root: dict[str, Any], depth: int) -> Any:
        if depth >= MAX_REF_DEPTH:
            raise DocumentError(f"$ref {ref!r}: references nest deeper than {MAX_REF_DEPTH}")
        target_url, fragment = urldefrag(urljoin(base or self.source, ref))
        if ref.startswith("#"):
            target, target_base = root, base
        else:
            target, target_base = self._document(target_url, ref), target_url
        resolver = openapi_ops.Resolver(target, openapi30=False)
        try:
            found = resolver.pointer("#" + fragment)
        except openapi_ops.DocumentProblem as exc:
            raise DocumentError(f"$ref {ref!r}: {exc}") from None
        return self._walk(found, base=target_base, root=target, depth=depth + 1)

    def _document(self, url: str, ref: str) -> dict[str, Any]:
        if not url.startswith(("http://", "https://")):
            raise DocumentError(
                f"$ref {ref!r}: a remote reference needs the document's URL to resolve against "
                "(register the document by URL), or an absolute http(s) URL"
            )
        if url not in self.documents:
            if len(self.documents) >= MAX_REMOTE:
                raise DocumentError(f"$ref {ref!r}: more than {MAX_REMOTE} referenced documents")
            self.documents[url] = parse(fetch(url, public_only=self.public_only), where=url)
        return self.documents[url]


def spec_blob(document_text: str, filters: Mapping[str, Any]) -> str:
    """What the transport reads (ServerSpec.openapi), built without re-encoding the document."""
    include = json.dumps(list(filters.get("include") or []))
    exclude = json.dumps(list(filters.get("exclude") or []))
    return f'{{"document":{document_text},"include":{include},"exclude":{exclude}}}'


def filter_problems(filters: Any) -> str:
    """Why `openapi_filters` cannot be used ('' if it can)."""
    if not isinstance(filters, dict) or set(filters) - {"include", "exclude"}:
        return 'Write {"include": ["tag:pets"], "exclude": ["method:DELETE"]} (both optional).'
    for key in ("include", "exclude"):
        rules = filters.get(key) or []
        if not isinstance(rules, list) or not all(isinstance(r, str) for r in rules):
            return f"{key}: a list of rules like tag:pets, method:GET, path:/pets/*, operation:listPets."
        for rule in rules:
            if problem := openapi_ops.filter_problem(rule):
                return f"{key}: {problem}"
    return ""


def complete(values: dict[str, Any], *, public_only: bool) -> dict[str, Any]:
    """An openapi server's fields with its document (re)loaded: from `openapi_source` when set, else
    the text given in `openapi_document` (JSON or YAML, e.g. an upload); `url` filled from the
    document when empty. ValidationError naming the field at fault."""
    source = str(values.get("openapi_source") or "")
    field = "openapi_source" if source else "openapi_document"
    try:
        loaded = load(
            source=source,
            text="" if source else str(values.get("openapi_document") or ""),
            public_only=public_only,
        )
    except DocumentError as exc:
        raise ValidationError({field: str(exc)}) from None
    url = values.get("url") or loaded.base_url
    if not url:
        raise ValidationError({"url": "The document names no server: give the API's base URL."})
    return {**values, "openapi_document": loaded.text, "url": url}
