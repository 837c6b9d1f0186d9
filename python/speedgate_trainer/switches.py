"""Switches declared as data, and their validation (docs/protocol.md sections 1 and 2).

One list of Switch objects feeds `describe --json`, the check of SG_* variables and the
preset parser; a trainer reads the chosen values, never os.environ.
"""

import re

SG_PREFIX = "SG_"
_NAME = re.compile(r"[A-Z0-9_]+")
_SAFE_VALUE = re.compile(r"[A-Za-z0-9_.:,+/-]{1,256}")


class UsageError(Exception):
    """Bad flag, switch or preset: the command exits 2 with this message."""


class Switch:
    """One tunable setting. Values are strings, written as in the environment.

    type: "bool" (values "0"/"1"), "int" (min..max inclusive; `values` are the
    candidates worth searching) or "enum" (`values` is the whole domain).
    identity: "bitwise" or "tolerance" -- measure it, do not guess (see the adapter
    README, "Classifying a switch"). effect: "speed", "memory" or "schedule".
    available: None, or a callable returning "" when the switch can run here and the
    reason otherwise (called lazily, so it may import torch).
    """

    def __init__(self, name, type="bool", values=None, default=None, identity="bitwise",
                 effect="speed", doc="", requires=(), min=None, max=None, workloads=None,
                 available=None, deterministic=True, min_world_size=1):
        if not _NAME.fullmatch(name):
            raise ValueError("switch name %r is not [A-Z0-9_]+" % name)
        if type not in ("bool", "int", "enum"):
            raise ValueError("switch %s: type %r is not bool|int|enum" % (name, type))
        if identity not in ("bitwise", "tolerance"):
            raise ValueError("switch %s: identity %r is not bitwise|tolerance" % (name, identity))
        if effect not in ("speed", "memory", "schedule"):
            raise ValueError("switch %s: effect %r is not speed|memory|schedule" % (name, effect))
        if type == "bool":
            values, default = ["0", "1"], "0" if default is None else default
        if type == "int" and (min is None or max is None):
            raise ValueError("switch %s: an int switch needs min and max" % name)
        self.name, self.type, self.values = name, type, [str(v) for v in values or []]
        self.default = str(default if default is not None else self.values[0])
        self.identity, self.effect, self.doc = identity, effect, doc
        self.requires, self.min, self.max = list(requires), min, max
        self.workloads = list(workloads) if workloads else None
        self.deterministic, self.min_world_size = deterministic, min_world_size
        self._available, self._reason = available, None
        for v in self.values + [self.default]:
            err = self.domain_error(v)
            if err or not _SAFE_VALUE.fullmatch(v):
                raise ValueError("switch %s: value %r: %s" % (name, v, err or "unsafe characters"))

    @property
    def env(self):
        return SG_PREFIX + self.name

    def unavailable_reason(self):
        if self._reason is None:
            self._reason = self._available() if self._available else ""
        return self._reason

    def domain_error(self, value):
        """"" when `value` is in the domain, else why not."""
        if self.type == "int":
            if not re.fullmatch(r"-?[0-9]+", value):
                return "expects an integer"
            if not self.min <= int(value) <= self.max:
                return "expects an integer in %d..%d" % (self.min, self.max)
            return ""
        if value in self.values:
            return ""
        return "expects " + (" or ".join(self.values) if self.type == "bool"
                             else "one of " + ", ".join(self.values))

    def manifest_entry(self):
        entry = {"name": self.name, "env": self.env, "type": self.type}
        if self.type == "int":
            entry.update({"min": self.min, "max": self.max})
        entry.update({"values": list(self.values), "default": self.default,
                      "requires": list(self.requires), "identity": self.identity,
                      "effect": self.effect, "deterministic": self.deterministic})
        if self.workloads:
            entry["workloads"] = list(self.workloads)
        if self.min_world_size > 1:
            entry["min_world_size"] = self.min_world_size
        reason = self.unavailable_reason()
        entry.update({"available": not reason, "unavailable_reason": reason, "doc": self.doc})
        return entry


def _check_entry(switches, key, value, where, workload):
    if not key.startswith(SG_PREFIX):
        raise UsageError("%s: %s is not an SG_* switch" % (where, key))
    spec = switches.get(key[len(SG_PREFIX):])
    if spec is None:
        raise UsageError("%s: unknown switch %s (known: %s)" % (
            where, key, ", ".join(s.env for s in switches.values())))
    err = spec.domain_error(value)
    if err:
        raise UsageError("%s: %s=%s is out of domain: %s" % (where, key, value, err))
    if value == spec.default:
        return
    reason = spec.unavailable_reason()
    if reason:
        raise UsageError("%s: %s is unavailable: %s" % (where, key, reason))
    if workload is not None and spec.workloads and workload not in spec.workloads:
        raise UsageError("%s: %s=%s does not apply to workload %s (only %s)" % (
            where, key, value, workload, ", ".join(spec.workloads)))


def read_preset(switches, path, workload=None):
    """Parses and checks a whole .env preset (SG_NAME=value lines, full-line # comments)
    before anything is applied. Returns {key: (value, where)}."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError("preset %s: cannot read: %s" % (path, getattr(e, "strerror", None) or e))
    entries = {}
    for number, raw in enumerate(lines, 1):
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        where = "preset %s:%d" % (path, number)
        key, eq, value = text.partition("=")
        if not eq or not key:
            raise UsageError("%s: expected SG_NAME=value, got '%s'" % (where, text))
        if not _NAME.fullmatch(key):
            raise UsageError("%s: bad variable name '%s'" % (where, key))
        if key in entries:
            raise UsageError("%s: %s already set at %s" % (where, key, entries[key][1]))
        _check_entry(switches, key, value, where, workload)
        entries[key] = (value, where)
    return entries


def resolve(switch_list, environ, preset_path=None, workload=None):
    """The preset first, the environment wins; then `requires` on the merged set.
    Returns {NAME: value} for every switch. Raises UsageError naming the switch (and
    the preset line) for anything the protocol calls bad input."""
    switches = {s.name: s for s in switch_list}
    chosen = read_preset(switches, preset_path, workload) if preset_path else {}
    for key in sorted(environ):
        if key.startswith(SG_PREFIX):
            _check_entry(switches, key, environ[key], "environment", workload)
            chosen[key] = (environ[key], "environment")
    values = {s.name: chosen.get(s.env, (s.default, ""))[0] for s in switch_list}
    for spec in switch_list:
        if values[spec.name] == spec.default:
            continue
        for req in spec.requires:
            dep, _, need = req.partition("=")
            if values.get(dep) != need:
                raise UsageError("%s: %s=%s requires %s%s (it is %s)" % (
                    chosen[spec.env][1], spec.env, values[spec.name], SG_PREFIX, req,
                    values.get(dep)))
    return values
