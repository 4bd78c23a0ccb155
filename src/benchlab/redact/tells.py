"""The tell classes: named detectors for what must never reach a public file.

Seed 002 ("Visibility") lists the infrastructure tells a raw run dir carries: cloud
instance names and zones, credential file paths, VM hostnames, accelerator SKUs, private
multi-GPU topology, local box paths. Each is a `Detector` here: a name, the class it
belongs to, a regular expression and, where a regex alone over-matches, a check.

What is deliberately NOT a tell: GPU marketing names ("RTX 4070", "A100", "H100 80GB",
"M3 Pro") and version numbers ("3.11.8", "12.6"). Those are the science the lab publishes.

Credential material itself (private keys, tokens) comes from detect-secrets' maintained
regex plugins, wrapped as detectors of class `secret`; its entropy and keyword plugins are
left out because hashes and run ids are high-entropy by design.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

# Tell classes, in the order reports list them.
HOST = "host"
IP = "ip"
INSTANCE = "instance"
ZONE = "zone"
MACHINE_TYPE = "machine-type"
CREDENTIAL_PATH = "credential-path"
TOPOLOGY = "topology"
HOME_PATH = "home-path"
USER = "user"
EMAIL = "email"
SECRET = "secret"
CLASSES = (
    HOST,
    IP,
    INSTANCE,
    ZONE,
    MACHINE_TYPE,
    CREDENTIAL_PATH,
    TOPOLOGY,
    HOME_PATH,
    USER,
    EMAIL,
    SECRET,
)

# Generic account names: masked inside a home path, but never hunted as bare words.
GENERIC_USERS = frozenset(
    {
        "admin",
        "azureuser",
        "centos",
        "debian",
        "default",
        "ec2-user",
        "guest",
        "home",
        "opc",
        "public",
        "root",
        "runner",
        "shared",
        "ubuntu",
        "user",
        "users",
        "vagrant",
    }
)


@dataclass(frozen=True)
class Detector:
    """One named way of finding one class of tell.

    `placeholder` is the stem of the replacement: numbered stems become `<host:1>`,
    `<host:2>` ...; a fixed placeholder (`numbered=False`) is used as is (`<path:home>`).
    `group` picks the part of the match that is the tell (-1: the first group that
    matched, for detect-secrets' patterns with alternative groups). `redact=False` marks a detector
    that only reports: a human must edit the file (promote refuses until then).
    `gate` is a cheap literal search that must succeed before the full regex runs: most
    text has no `.ssh` in it, and the full pattern is far slower than the literal.
    """

    name: str
    tell_class: str
    regex: re.Pattern[str]
    placeholder: str
    numbered: bool = True
    group: int = 0
    check: Callable[[str], bool] | None = field(default=None, compare=False)
    redact: bool = True
    gate: re.Pattern[str] | None = None

    def replacement(self, number: int) -> str:
        return f"<{self.placeholder}:{number}>" if self.numbered else self.placeholder


def _c(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, flags)


_gate = _c


# --- addresses ------------------------------------------------------------------------------

_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_IPV4 = _c(rf"(?<![\w.])(?:{_OCTET}\.){{3}}{_OCTET}(?![\w]|\.\d)")
_IPV6 = _c(r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?:%[\w.]+)?(?![\w:])")


def _ipv6_check(text: str) -> bool:
    """A real address, not `a::b`, a slice `::2` or a clock `12:00:00`."""
    address = text.split("%", 1)[0]
    try:
        ipaddress.IPv6Address(address)
    except ValueError:
        return False
    groups = [g for g in address.split(":") if g]
    if len(groups) >= 3:
        return True
    return len(groups) == 2 and any(len(g) >= 3 for g in groups)


# --- hosts ----------------------------------------------------------------------------------

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_INTERNAL_FQDN = _c(
    rf"(?<![\w.-])(?<!from )(?<!import )(?!(?:config|settings|env|app)\.local\b)(?:{_LABEL}\.)+"
    r"(?:local|lan|internal|intranet|corp|localdomain|home\.arpa|ts\.net)(?![\w(-]|\.[\w-])",
    re.IGNORECASE,
)
_VM_HOST = _c(
    r"(?<![\w.-])(?:"
    r"ip-\d{1,3}-\d{1,3}-\d{1,3}-\d{1,3}(?:\.[a-z0-9-]+)*(?:\.(?:ec2|compute)\.internal)?"
    r"|ec2-\d{1,3}-\d{1,3}-\d{1,3}-\d{1,3}\.[a-z0-9.-]*amazonaws\.com"
    rf"|(?:{_LABEL}\.)+(?:compute\.internal|cloudapp\.net|cloudapp\.azure\.com"
    r"|svc\.cluster\.local|c\.[a-z][a-z0-9-]*\.internal)"
    r")(?![\w-])",
    re.IGNORECASE,
)

# --- cloud ----------------------------------------------------------------------------------

_HEXID = r"(?:[0-9a-f]{17}|[0-9a-f]{8})"
_INSTANCE = _c(
    r"(?<![\w-])(?:"
    rf"(?:i|ami|vol|eni|snap|sg|subnet|vpc|igw|nat|rtb|eipalloc)-{_HEXID}"
    r"|gke-[a-z0-9-]+?-[0-9a-f]{8}-[a-z0-9]{4}"
    r"|aks-[a-z0-9]+-\d{8}-vmss[0-9a-z]{6}"
    r"|instance-\d{8}-\d{6}"
    r"|projects/[\w.-]+/zones/[\w-]+/instances/[\w-]+"
    r"|/subscriptions/[0-9a-f-]{36}(?:/[\w.()-]+)*"
    r"|arn:aws[\w-]*:[\w-]+:[\w-]*:\d{12}:[\w/:.+=@-]+"
    r")(?![\w-])"
)
_DIRECTIONS = r"(?:east|west|north|south|central|northeast|northwest|southeast|southwest)"
_AZURE_REGIONS = (
    "eastus eastus2 westus westus2 westus3 centralus northcentralus southcentralus "
    "westcentralus canadacentral canadaeast brazilsouth northeurope westeurope uksouth "
    "ukwest francecentral germanywestcentral norwayeast switzerlandnorth swedencentral "
    "polandcentral italynorth spaincentral uaenorth qatarcentral israelcentral "
    "southafricanorth australiaeast australiasoutheast australiacentral eastasia "
    "southeastasia japaneast japanwest koreacentral koreasouth centralindia southindia "
    "westindia mexicocentral"
).split()
_ZONE = _c(
    r"(?<![\w-])(?:"
    rf"(?:us|eu|ap|sa|ca|me|af|il|mx|cn)-(?:gov-|iso-)?{_DIRECTIONS}-\d{{1,2}}"
    r"(?:-[a-z]{3}-\d[a-z]?|[a-z])?"
    rf"|(?:us|europe|asia|australia|northamerica|southamerica|me|africa)-{_DIRECTIONS}\d{{1,2}}"
    r"(?:-[a-z])?"
    r"|[a-z]{3}\d-az\d"
    rf"|(?:{'|'.join(_AZURE_REGIONS)})"
    r")(?![\w-])"
)
_MACHINE_TYPE = _c(
    r"(?<![\w.-])(?:"
    # AWS: p4d.24xlarge, g5.xlarge, trn1.32xlarge, ml.p4d.24xlarge, mac2-m2pro.metal
    r"(?:ml\.)?(?:a|c|d|dl|f|g|gr|h|hpc|i|im|inf|is|m|mac|p|r|t|trn|u|vt|x|z)\d+[a-z]*"
    r"(?:-[a-z0-9]+)?\.(?:nano|micro|small|medium|large|xlarge|\d{1,2}xlarge|metal(?:-\d+xl)?)"
    # GCP: a2-highgpu-8g, n1-standard-8, e2-micro, ct5lp-hightpu-4t, n2-custom-8-32768
    r"|(?:a[234]|g[24]|n[124]d?|c[234][ad]?|e2|m[1-4]|t2[ad]|h3|z3|x4|ct[3-6][a-z]*)-"
    r"(?:standard|highmem|highcpu|highgpu|megagpu|ultragpu|ultramem|megamem|edgegpu"
    r"|hightpu|highlssd|standardlssd|micro|small|medium|custom)(?:-\d+[a-z]?)*"
    # Azure: Standard_ND96asr_v4, Standard_NC24ads_A100_v4
    r"|(?:Standard|Basic)_[A-Z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)*"
    # accelerator SKUs: GKE/GCE accelerator types and TPU slice types
    r"|nvidia-(?:tesla-[a-z0-9]+(?:-vws)?|a100-80gb|h100-80gb|h100-mega-80gb|h200-141gb"
    r"|b200|gb200|l4(?:-vws)?|rtx-pro-6000|a10g?)"
    r"|tpu-v\d[a-z]*(?:-[a-z0-9]+)*"
    r"|v(?:2|3|4|5e|5p|6e)-(?:4|8|16|32|64|128|256|512|1024|2048)|v5litepod-\d+"
    r")(?![\w-])"
)

# --- paths ----------------------------------------------------------------------------------

_PATH_PREFIX = r"(?:[~\w.$%{}:-]*[/\\])*"
_CREDENTIAL_PATH = _c(
    rf"(?<![\w.-]){_PATH_PREFIX}(?:"
    r"\.ssh[/\\]+(?:id_[\w.-]+|[\w.-]+\.pem)"
    r"|\.aws[/\\]+(?:credentials|config)"
    r"|\.config[/\\]+gcloud(?:[/\\]+[\w.@-]+)*"
    r"|application_default_credentials\.json"
    r"|\.kube[/\\]+config[\w.-]*"
    r"|kubeconfig(?:[-_.][\w.-]+)?\.ya?ml|(?<=[/\\])kubeconfig[\w.-]*"
    r"|service[-_]?account[\w.-]*\.json"
    r"|\.docker[/\\]+config\.json"
    r"|\.(?:netrc|git-credentials|pgpass|pypirc)"
    r"|[\w.-]+\.(?:ppk|p12|pfx|jks|keystore)"
    r")(?![\w-])"
)
_HOME_PATH = _c(
    r"(?:(?<![\w.-])/(?:home|Users)|(?<![\w])[A-Za-z]:\\+Users)[/\\]+"
    r"([A-Za-z0-9_][A-Za-z0-9._-]*(?:\$)?)"
)

# --- topology -------------------------------------------------------------------------------

_LINK = r"(?:X|NV\d+|SYS|NODE|PHB|PXB|PIX|SOC)"
_TOPOLOGY = _c(
    rf"^[ \t]*(?:(?:GPU|NIC)\d+|mlx5_\d+)(?:[ \t]+{_LINK}){{2,}}\b[^\n]*$"
    r"|^[ \t]*GPU0(?:[ \t]+(?:GPU\d+|NIC\d+|mlx5_\d+)){1,}[^\n]*$",
    re.MULTILINE,
)
_PCI = _c(r"(?<![\w:])(?:[0-9A-Fa-f]{8}|[0-9A-Fa-f]{4}):[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7](?!\w)")

# --- people ---------------------------------------------------------------------------------

_EMAIL = _c(r"(?<![\w.%+-])[A-Za-z0-9._%+-]+@(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,}(?![\w-])")
# user@10.0.0.5, user@[fe80::1], user@shorthost; not pkg@2.0.6, actions/checkout@v4, x@latest.
_USER_AT = _c(
    r"(?<![\w.%+/-])([A-Za-z_][A-Za-z0-9_.-]{0,31})@(?=(?:\d{1,3}\.){3}\d|\["
    r"|(?!v\d|(?:latest|next|stable|main|master|beta|alpha|canary|nightly|head)(?![\w.-]))"
    r"[A-Za-z][A-Za-z0-9-]*(?![\w.-]))"
)


def _not_generic_user(name: str) -> bool:
    return name.lower() not in GENERIC_USERS


# --- secrets beyond detect-secrets ----------------------------------------------------------

_PRIVATE_KEY_BLOCK = _c(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
    r"(?:[\s\S]{0,12000}?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)?"
)
_EXTRA_TOKENS = _c(
    r"(?<![\w-])(?:hf_[A-Za-z0-9]{30,}|tskey-[a-z]+-[A-Za-z0-9]{6,}-[A-Za-z0-9]{16,}"
    r"|github_pat_[A-Za-z0-9_]{60,}|AIza[0-9A-Za-z_-]{35}|ya29\.[0-9A-Za-z_-]{20,})"
)
_AWS_SECRET = _c(
    r"(?i)aws_secret_access_key[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"
)


@functools.cache
def builtin_detectors() -> tuple[Detector, ...]:
    """The tell classes every policy starts from (redaction.yaml adds to them)."""
    return (
        Detector("private-key", SECRET, _PRIVATE_KEY_BLOCK, "<secret>", numbered=False),
        Detector("token", SECRET, _EXTRA_TOKENS, "<secret>", numbered=False),
        Detector("aws-secret-key", SECRET, _AWS_SECRET, "<secret>", numbered=False, group=1),
        *secret_detectors(),
        Detector(
            "credential-path",
            CREDENTIAL_PATH,
            _CREDENTIAL_PATH,
            "<path:credentials>",
            numbered=False,
        ),
        Detector("email", EMAIL, _EMAIL, "email"),
        Detector(
            "vm-hostname",
            HOST,
            _VM_HOST,
            "host",
            gate=_gate(r"(?i)ip-\d|ec2-|\.internal|cloudapp|\.svc\."),
        ),
        Detector(
            "internal-fqdn",
            HOST,
            _INTERNAL_FQDN,
            "host",
            gate=_gate(r"(?i)\.(?:local|lan|internal|intranet|corp|home\.arpa|ts\.net)"),
        ),
        Detector("cloud-instance", INSTANCE, _INSTANCE, "instance"),
        Detector("cloud-zone", ZONE, _ZONE, "zone"),
        Detector("machine-type", MACHINE_TYPE, _MACHINE_TYPE, "machine-type"),
        Detector("gpu-topology", TOPOLOGY, _TOPOLOGY, "<topology>", numbered=False),
        Detector("pci-bus-id", TOPOLOGY, _PCI, "pci"),
        Detector("ipv4", IP, _IPV4, "ip"),
        Detector("ipv6", IP, _IPV6, "ip", check=_ipv6_check),
        Detector("home-path", HOME_PATH, _HOME_PATH, "<path:home>", numbered=False),
        Detector("user-at", USER, _USER_AT, "user", group=1, check=_not_generic_user),
    )


_SKIPPED_PLUGINS = frozenset(
    {
        "IPPublicDetector",  # the ip tell class covers every address, public or not
        # Keyword-assignment patterns for four niche services (cl_password=..., sl_key=...):
        # each costs more than all the other secret plugins together on large files.
        "CloudantDetector",
        "IbmCloudIamDetector",
        "IbmCosHmacDetector",
        "SoftlayerDetector",
        "KeywordDetector",  # "password" in prose; not a key
        "Base64HighEntropyString",  # run ids, hashes and sha256 sums are high-entropy
        "HexHighEntropyString",
    }
)


def secret_detectors() -> list[Detector]:
    """detect-secrets' regex plugins, one detector per plugin, named after it."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector

    detectors: list[Detector] = []
    plugins = get_mapping_from_secret_type_to_class().values()
    for plugin in sorted(plugins, key=lambda cls: cls.__name__):
        if plugin.__name__ in _SKIPPED_PLUGINS or not issubclass(plugin, RegexBasedDetector):
            continue
        name = "ds-" + plugin.__name__.removesuffix("Detector").lower()
        for index, regex in enumerate(plugin().denylist):
            # The whole match is the secret, except for basic auth (`://user:PASSWORD@`),
            # whose group is the password; other plugins' groups are mere prefixes.
            group = -1 if plugin.__name__ == "BasicAuthDetector" else 0
            detectors.append(
                Detector(
                    f"{name}-{index}" if index else name,
                    SECRET,
                    regex,
                    "<secret>",
                    numbered=False,
                    group=group,
                )
            )
    return detectors


def known_names_detector(
    name: str, tell_class: str, placeholder: str, names: Iterable[str]
) -> Detector | None:
    """A detector for literal names (hostnames, users), matched as whole words."""
    words = sorted({n for n in names if n}, key=lambda n: (-len(n), n))
    if not words:
        return None
    alternation = "|".join(re.escape(w) for w in words)
    regex = re.compile(rf"(?<![\w.-])(?:{alternation})(?![\w-])", re.IGNORECASE)
    return Detector(name, tell_class, regex, placeholder)


def user_words_regex(names: Iterable[str]) -> re.Pattern[str] | None:
    words = sorted(
        {n for n in names if len(n) >= 3 and n.lower() not in GENERIC_USERS},
        key=lambda n: (-len(n), n),
    )
    if not words:
        return None
    return re.compile(rf"(?<![\w.-])(?:{'|'.join(re.escape(w) for w in words)})(?![\w-])")
