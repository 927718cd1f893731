"""Kerberos principal -> short user name, as Hadoop's `hadoop.security.auth_to_local` rules map them
(`org.apache.hadoop.security.authentication.util.KerberosName`), and HBase's superuser check on short names.

Rules: `DEFAULT` (a principal of the default realm maps to its first component) and
`RULE:[<n>:<format>](<regex>)s/<pattern>/<replacement>/[g][/L]` (for principals of n components, `$0` the
realm, `$1`.. the components; the formatted name must match the regex, then the substitution applies). A
principal no rule maps is refused (`NoMatchingRule: No rules applied to ...`), as a Hadoop server refuses it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from bedkit.security.gss import split_principal

NO_MATCHING_RULE = "org.apache.hadoop.security.authentication.util.KerberosName$NoMatchingRule"
_RULE = re.compile(r"\s*((DEFAULT)|(RULE:\[(\d*):([^\]]*)](\(([^)]*)\))?(s/([^/]*)/([^/]*)/(g)?)?))/?(L)?")
_PARAM = re.compile(r"\$(\d+)")


class NoMatchingRule(Exception):
    """No auth_to_local rule maps the principal; `str()` is Hadoop's message."""


class BadRules(ValueError):
    """The auth_to_local text does not parse; the message quotes the rest that does not."""


@dataclass(frozen=True)
class Rule:
    default: bool
    components: int = 0
    fmt: str = ""
    match: re.Pattern | None = None
    pattern: re.Pattern | None = None
    replacement: str = ""
    repeat: bool = False
    lower: bool = False

    def apply(self, realm: str, parts: list[str], default_realm: str) -> str | None:
        if self.default:
            return parts[0] if realm == default_realm else None
        if len(parts) != self.components:
            return None
        values = [realm] + parts

        def param(m: re.Match) -> str:
            i = int(m.group(1))
            if i >= len(values):
                raise BadRules(f"index {i} from {self.fmt} is outside of the valid range 0 to {len(values) - 1}")
            return values[i]
        base = _PARAM.sub(param, self.fmt)
        if self.match is not None and not self.match.fullmatch(base):
            return None
        result = base
        if self.pattern is not None:
            result = self.pattern.sub(self.replacement.replace("$", "\\"), base, count=0 if self.repeat else 1)
        if "@" in result or "/" in result:
            raise NoMatchingRule(f"{NO_MATCHING_RULE}: Non-simple name {result} after auth_to_local rule")
        return result.lower() if self.lower else result


def parse_rules(text: str) -> list[Rule]:
    rules: list[Rule] = []
    rest = text.strip()
    while rest:
        m = _RULE.match(rest)
        if m is None or m.end() == 0:
            raise BadRules(f"Invalid rule: {rest}")
        if m.group(2):
            rules.append(Rule(default=True))
        else:
            rules.append(Rule(
                default=False, components=int(m.group(4) or 0), fmt=m.group(5),
                match=re.compile(m.group(7)) if m.group(7) is not None else None,
                pattern=re.compile(m.group(9)) if m.group(8) else None, replacement=m.group(10) or "",
                repeat=bool(m.group(11)), lower=bool(m.group(12))))
        rest = rest[m.end():].strip()
    return rules


def short_name(principal: str, rules: list[Rule], default_realm: str) -> str:
    """The user name HBase acts as for `principal` (`User.getShortName()`); NoMatchingRule when none applies."""
    parts, realm = split_principal(principal)
    if realm is None:
        return principal  # already simple
    for rule in rules:
        result = rule.apply(realm, parts, default_realm)
        if result is not None:
            return result
    raise NoMatchingRule(f"{NO_MATCHING_RULE}: No rules applied to {principal}")


def cross_realm_rules(realms: list[str]) -> str:
    """Rules mapping principals of the trusted `realms` (one or two components) to their first component, then
    DEFAULT: what an operator writes in core-site.xml for a cross-realm trust."""
    out = []
    for realm in realms:
        escaped = realm.replace(".", r"\.")
        out += [f"RULE:[1:$1@$0](.*@{escaped})s/@.*//", f"RULE:[2:$1@$0](.*@{escaped})s/@.*//"]
    return " ".join(out + ["DEFAULT"])
