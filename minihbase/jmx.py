"""`/jmx` as Hadoop's JMXJsonServlet serves it: `{"beans": [...]}`, `qry=<ObjectName pattern>`, `get=bean::attr`.

Beans are registered with a provider returning their attributes, so values are read at request time. Part 2
fills the replication bean with `registry.register(REPLICATION_BEAN, provider)` (or `extend`).
"""
from __future__ import annotations

import fnmatch
import threading
from typing import Callable

from minihbase.httpserver import Request, Response

REPLICATION_BEAN = "Hadoop:service=HBase,name=RegionServer,sub=Replication"


class MalformedObjectName(ValueError):
    pass


def _parse_object_name(text: str) -> tuple[str, dict[str, str], bool]:
    """-> (domain, properties, property-list pattern)."""
    domain, sep, props = text.partition(":")
    if not sep or not props:
        raise MalformedObjectName(f"Key properties cannot be empty: {text!r}")
    out: dict[str, str] = {}
    wildcard = False
    for part in props.split(","):
        if part == "*":
            wildcard = True
            continue
        key, eq, value = part.partition("=")
        if not eq or not key:
            raise MalformedObjectName(f"Invalid key property {part!r} in {text!r}")
        out[key] = value
    return domain, out, wildcard


def object_name_matches(pattern: str, name: str) -> bool:
    """JMX ObjectName pattern semantics: domain and values may use * and ?; `,*` allows other properties."""
    pdom, pprops, wildcard = _parse_object_name(pattern)
    ndom, nprops, _ = _parse_object_name(name)
    if not fnmatch.fnmatchcase(ndom, pdom):
        return False
    for key, value in pprops.items():
        if key not in nprops or not fnmatch.fnmatchcase(nprops[key], value):
            return False
    return wildcard or set(nprops) == set(pprops)


class JmxRegistry:
    def __init__(self):
        self._beans: dict[str, list[Callable[[], dict]]] = {}
        self._lock = threading.Lock()

    def register(self, name: str, provider: Callable[[], dict]) -> None:
        """Set the bean's providers to this one (replacing any earlier)."""
        _parse_object_name(name)
        with self._lock:
            self._beans[name] = [provider]

    def extend(self, name: str, provider: Callable[[], dict]) -> None:
        """Add attributes to a bean (later providers win on a shared key)."""
        with self._lock:
            self._beans.setdefault(name, []).append(provider)

    def beans(self, query: str = "*:*") -> list[dict]:
        with self._lock:
            items = [(n, list(ps)) for n, ps in sorted(self._beans.items())]
        out = []
        for name, providers in items:
            if not object_name_matches(query, name):
                continue
            attrs: dict = {"name": name}
            for p in providers:
                attrs.update(p())
            out.append(attrs)
        return out

    def handle(self, request: Request) -> Response:
        try:
            if "get" in request.query:
                bean, sep, attr = request.query["get"].partition("::")
                if not sep:
                    return Response(400, {"result": "ERROR", "message": "query format is not as expected."})
                beans = self.beans(bean)
                return Response(200, {"beans": [{"name": b["name"], attr: b.get(attr)} for b in beans]})
            return Response(200, {"beans": self.beans(request.query.get("qry") or "*:*")})
        except MalformedObjectName as e:
            return Response(400, {"result": "ERROR", "message": str(e)})
