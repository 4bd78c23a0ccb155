"""The redaction policy: which detectors run, which names are known, what is allowed.

A policy is the built-in tell classes plus what this store knows about itself:
- hostnames and user names from the machines' private specs
  (`runs/by-machine/<m>/specs.json`: `hostname`, `user`) and from the sweep configs
  (`experiments/sweeps/*.yaml`: `devices.*.host`, `devices.*.user`);
- `experiments/benchmark/redaction.yaml`: extra patterns, known names, and an allow list of
  values, value patterns and paths (see the commented file in the repo).

Machine ids are public by design (they are in every run id), so a hostname equal to a
machine id cannot be hidden and is not hunted.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from benchlab.errors import ConfigError, StoreError
from benchlab.files import SMALL_CAP, read_bytes, read_text
from benchlab.layout import Store, find_store
from benchlab.redact import tells
from benchlab.redact.cluster_tells import cluster_detectors
from benchlab.redact.tells import Detector

# JSON keys whose string values are private whatever they look like, and their class.
DEFAULT_PRIVATE_KEYS: dict[str, str] = {
    "hostname": tells.HOST,
    "host": tells.HOST,
    "fqdn": tells.HOST,
    "node_name": tells.HOST,
    "nodename": tells.HOST,
    "ip": tells.IP,
    "ip_address": tells.IP,
    "user": tells.USER,
    "username": tells.USER,
    "email": tells.EMAIL,
    "instance_id": tells.INSTANCE,
    "instance_name": tells.INSTANCE,
    "availability_zone": tells.ZONE,
    "zone": tells.ZONE,
    "region": tells.ZONE,
    "instance_type": tells.MACHINE_TYPE,
    "machine_type": tells.MACHINE_TYPE,
    "vm_size": tells.MACHINE_TYPE,
    "serial": tells.HARDWARE_ID,
    "serial_number": tells.HARDWARE_ID,
    "board_serial": tells.HARDWARE_ID,
    "gpu_uuid": tells.HARDWARE_ID,
    "mac_address": tells.HARDWARE_ID,
    "pod_name": tells.K8S,
    "project_id": tells.CLOUD_ACCOUNT,
    "subscription_id": tells.CLOUD_ACCOUNT,
    "tenant_id": tells.CLOUD_ACCOUNT,
    "resource_group_name": tells.CLOUD_ACCOUNT,
    "cluster_name": tells.CLOUD_ACCOUNT,
    "account_id": tells.CLOUD_ACCOUNT,
}

# Names reserved for documentation and tests (RFC 2606, 6761): never anybody's machine.
_RESERVED_NAME = re.compile(
    r"(?i)(?:^|.*[.@])(?:example|invalid|test|localhost|example\.(?:com|net|org))$"
)
# Well-known names every cluster and cloud VM shares: they name no site.
_ALWAYS_ALLOWED = frozenset(
    {
        "localhost",
        "localhost.localdomain",
        "git@github.com",
        "metadata.google.internal",
        "host.docker.internal",
        "gateway.docker.internal",
        "kubernetes.default.svc.cluster.local",
    }
)
_DOC_NETWORKS = tuple(
    ipaddress.ip_network(n)
    for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32")
)
_NUMBERED_PLACEHOLDER = {
    tells.HOST: "host",
    tells.IP: "ip",
    tells.INSTANCE: "instance",
    tells.ZONE: "zone",
    tells.MACHINE_TYPE: "machine-type",
    tells.USER: "user",
    tells.EMAIL: "email",
    tells.TOPOLOGY: "pci",
    tells.HARDWARE_ID: "serial",
    tells.K8S: "node",
    tells.CLOUD_ACCOUNT: "cloud",
}
_FIXED_PLACEHOLDER = {
    tells.CREDENTIAL_PATH: "<path:credentials>",
    tells.HOME_PATH: "<path:home>",
    tells.SECRET: "<secret>",
    tells.SSH_KEY: "<ssh-key>",
    tells.SITE_PATH: "<path:site>",
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class KnownNames(_Strict):
    hosts: list[str] = Field(default_factory=list)
    users: list[str] = Field(default_factory=list)
    instances: list[str] = Field(default_factory=list)


class PatternSpec(_Strict):
    name: str
    class_: str = Field(alias="class")
    regex: str
    redact: bool = True


class AllowList(_Strict):
    values: list[str] = Field(default_factory=list)
    patterns: list[str] = Field(default_factory=list)
    paths: list[str] = Field(default_factory=list)


class RedactionConfig(_Strict):
    """`experiments/benchmark/redaction.yaml`."""

    version: int = 1
    known: KnownNames = Field(default_factory=KnownNames)
    patterns: list[PatternSpec] = Field(default_factory=list)
    allow: AllowList = Field(default_factory=AllowList)
    private_keys: dict[str, str] = Field(default_factory=dict)


def placeholder_for(tell_class: str) -> tuple[str, bool]:
    """(placeholder stem or text, numbered?) for a class, as custom patterns use it."""
    if tell_class in _FIXED_PLACEHOLDER:
        return _FIXED_PLACEHOLDER[tell_class], False
    return _NUMBERED_PLACEHOLDER.get(tell_class, tell_class), True


@dataclass
class Policy:
    """Everything `find`, `Redactor` and `bench scan` need; build it with `load_policy`."""

    detectors: list[Detector]
    allow_values: frozenset[str] = frozenset()
    allow_patterns: tuple[re.Pattern[str], ...] = ()
    allow_paths: tuple[str, ...] = ()
    private_keys: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_PRIVATE_KEYS))
    machine_ids: frozenset[str] = frozenset()
    public_text: frozenset[str] = frozenset()
    """Params the store's sweeps declare as public text (`public_text:` in a sweep config):
    their values are published as scrubbed, bounded text rather than as short slugs."""

    def allowed(self, tell_class: str, value: str) -> bool:
        """True for values that look like a tell but are not private."""
        lowered = value.lower()
        if lowered in _ALWAYS_ALLOWED or lowered in self.allow_values:
            return True
        if tell_class in (tells.HOST, tells.EMAIL) and _RESERVED_NAME.match(value):
            return True
        if tell_class == tells.IP and _harmless_ip(value):
            return True
        return any(p.fullmatch(value) for p in self.allow_patterns)

    def path_allowed(self, relative: str) -> bool:
        return any(fnmatch(relative, pattern) for pattern in self.allow_paths)


def _harmless_ip(value: str) -> bool:
    try:
        address = ipaddress.ip_address(value.split("%", 1)[0])
    except ValueError:
        return False
    if address.is_loopback or address.is_unspecified:
        return True
    if address.version == 4 and value.startswith("255."):
        return True  # a netmask, not a machine
    return any(address in net for net in _DOC_NETWORKS if net.version == address.version)


def _is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def read_config(path: Path) -> RedactionConfig:
    """Parse redaction.yaml; a bad file is one line naming the file and the field."""
    if not path.exists() and not path.is_symlink():
        return RedactionConfig()
    try:  # a link, FIFO or device there is refused (one line), never the default policy
        data = yaml.safe_load(read_text(path, cap=SMALL_CAP)) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        raise ConfigError(f"{path}: {where}not valid YAML") from None
    try:
        config = RedactionConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        pointer = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"])
        raise ConfigError(f"{path}: {pointer}: {first['msg']}") from None
    for index, spec in enumerate(config.patterns):
        if spec.class_ not in tells.CLASSES:
            raise ConfigError(
                f"{path}: $.patterns[{index}].class: unknown class {spec.class_!r} "
                f"(one of {', '.join(tells.CLASSES)})"
            )
        try:
            re.compile(spec.regex)
        except re.error as exc:
            raise ConfigError(f"{path}: $.patterns[{index}].regex: {exc}") from None
    for index, pattern in enumerate(config.allow.patterns):
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigError(f"{path}: $.allow.patterns[{index}]: {exc}") from None
    return config


@dataclass
class StoreNames:
    """What the store's private files say about the fleet."""

    hosts: set[str] = field(default_factory=set)
    users: set[str] = field(default_factory=set)
    machine_ids: set[str] = field(default_factory=set)
    public_text: set[str] = field(default_factory=set)


def _yaml_file(path: Path) -> Any:
    try:
        return yaml.safe_load(read_text(path, cap=SMALL_CAP))
    except (StoreError, yaml.YAMLError):
        raise ConfigError(f"{path}: not valid YAML (needed for its host names)") from None


def collect_store_names(store_root: Path) -> StoreNames:
    """Hostnames, users and machine ids from private specs and sweep configs."""
    import json

    names = StoreNames()
    by_machine = store_root / "runs" / "by-machine"
    if by_machine.is_dir():
        for machine_dir in sorted(p for p in by_machine.iterdir() if p.is_dir()):
            names.machine_ids.add(machine_dir.name)
            specs = machine_dir / "specs.json"
            if not specs.is_file():
                continue
            try:
                data = json.loads(read_bytes(specs, cap=SMALL_CAP))
            except (StoreError, ValueError):
                raise ConfigError(f"{specs}: not valid JSON (needed for its hostname)") from None
            if isinstance(data, dict):
                for key, target in (
                    ("hostname", names.hosts),
                    ("user", names.users),
                    ("username", names.users),
                ):
                    if isinstance(data.get(key), str):
                        target.add(data[key])
                if isinstance(data.get("machine_id"), str):
                    names.machine_ids.add(data["machine_id"])
    sweeps = store_root.parent / "sweeps"
    if sweeps.is_dir():
        for config in sorted([*sweeps.glob("*.yaml"), *sweeps.glob("*.yml")]):
            data = _yaml_file(config)
            declared = data.get("public_text") if isinstance(data, dict) else None
            if isinstance(declared, list):
                names.public_text.update(str(name) for name in declared)
            devices = data.get("devices") if isinstance(data, dict) else None
            if not isinstance(devices, dict):
                continue
            for device_id, device in devices.items():
                names.machine_ids.add(str(device_id))
                if not isinstance(device, dict):
                    continue
                if isinstance(device.get("machine_id"), str):
                    names.machine_ids.add(device["machine_id"])
                if isinstance(device.get("host"), str):
                    names.hosts.add(device["host"])
                if isinstance(device.get("user"), str):
                    names.users.add(device["user"])
    return names


def build_policy(config: RedactionConfig, names: StoreNames | None = None) -> Policy:
    names = names or StoreNames()
    allow_values = frozenset(v.lower() for v in config.allow.values)
    policy = Policy(
        detectors=[],
        allow_values=allow_values,
        allow_patterns=tuple(re.compile(p) for p in config.allow.patterns),
        allow_paths=tuple(config.allow.paths),
        private_keys={**DEFAULT_PRIVATE_KEYS, **config.private_keys},
        machine_ids=frozenset(names.machine_ids),
        public_text=frozenset(names.public_text),
    )
    public = {m.lower() for m in names.machine_ids}
    hosts: set[str] = set()
    for host in {*names.hosts, *config.known.hosts}:
        host = host.strip()
        if not host or _is_ip(host) or policy.allowed(tells.HOST, host):
            continue
        for candidate in (host, host.split(".", 1)[0]):
            if len(candidate) >= 3 and candidate.lower() not in public:
                hosts.add(candidate)
    users = {
        u.strip()
        for u in {*names.users, *config.known.users}
        if len(u.strip()) >= 3
        and u.strip().lower() not in tells.GENERIC_USERS
        and u.strip().lower() not in public
    }
    custom: list[Detector] = []
    for spec in config.patterns:
        text, numbered = placeholder_for(spec.class_)
        custom.append(
            Detector(
                spec.name,
                spec.class_,
                re.compile(spec.regex),
                text,
                numbered=numbered,
                redact=spec.redact,
            )
        )
    known = [
        tells.known_names_detector(
            "known-instance", tells.INSTANCE, "instance", config.known.instances
        ),
        tells.known_names_detector("known-host", tells.HOST, "host", hosts),
        tells.known_names_detector("known-user", tells.USER, "user", users),
    ]
    policy.detectors = [
        *custom,
        *tells.builtin_detectors(),
        *cluster_detectors(),
        *(d for d in known if d),
    ]
    return policy


def load_policy(store_root: Path | None) -> Policy:
    """The policy of a store (built-in classes alone when there is no store)."""
    if store_root is None or not store_root.is_dir():
        return build_policy(RedactionConfig())
    config = read_config(Store(store_root).redaction_path)
    return build_policy(config, collect_store_names(store_root))


_CACHE: dict[tuple[Any, ...], Policy] = {}

_STORE: ContextVar[Path | None] = ContextVar("benchlab_policy_store", default=None)
"""The store a command works on, set by `store_policy` (None: the store found from here)."""


@contextmanager
def store_policy(store_root: Path) -> Iterator[None]:
    """Within it, `default_policy` is the policy of `store_root`'s store, not of the store
    found from the working directory (ARCHITECTURE.md, Publishing and redaction): a build,
    retract, resolve or mark called through the Python API on `Store(x)` from anywhere
    redacts with x's redaction.yaml, private specs and sweeps."""
    token = _STORE.set(store_root)
    try:
        yield
    finally:
        _STORE.reset(token)


def default_policy() -> Policy:
    """The policy of the store this command works on (`store_policy`), else of the store
    found from here; cached while its sources are unchanged."""
    root = _STORE.get()
    return policy_of(root if root is not None else find_store())


def policy_of(root: Path) -> Policy:
    """The policy of the store at `root`, cached while its sources are unchanged."""
    key = (
        str(root),
        *(
            _mtime(p)
            for p in (Store(root).redaction_path, root.parent / "sweeps", Store(root).by_machine)
        ),
    )
    policy = _CACHE.get(key)
    if policy is None:
        _CACHE.clear()
        policy = _CACHE[key] = load_policy(root)
    return policy


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0
