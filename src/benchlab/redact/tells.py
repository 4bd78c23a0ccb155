"""The tell classes: named detectors for what must never reach a public file.

A raw run dir carries infrastructure tells (ARCHITECTURE.md, Publishing and redaction): cloud
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

from benchlab.redact.secret_patterns import secret_patterns

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
HARDWARE_ID = "hardware-id"
SSH_KEY = "ssh-key"
K8S = "k8s"
CLOUD_ACCOUNT = "cloud-account"
SITE_PATH = "site-path"
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
    HARDWARE_ID,
    SSH_KEY,
    K8S,
    CLOUD_ACCOUNT,
    SITE_PATH,
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
        "git",
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
    text has no `.ssh` in it, and the full pattern is far slower than the literal. Gates are
    alternations of plain literals (`erial|ERIAL`, not `(?i)serial`): those the regex
    module searches several times faster than case-folded or class-led alternatives.
    `context` sees the text before the match (the same line, up to 160 characters) and
    returns False to drop it: `1.2.3.4` is an address, but `driver 1.2.3.4` is a version,
    and a lookbehind of fixed width cannot say "after any of these words".
    """

    name: str
    tell_class: str
    regex: re.Pattern[str]
    placeholder: str
    numbered: bool = True
    group: int = 0
    check: Callable[[str], bool] | None = field(default=None, compare=False)
    context: Callable[[str], bool] | None = field(default=None, compare=False)
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
    r"(?:local|lan|internal|intranet|intra|corp|localdomain|home\.arpa|ts\.net|home|lab|private"
    r"|svc)(?![\w(-]|\.[\w-])",
    re.IGNORECASE,
)
# `build01.corp.acme.com`: an internal zone under a public domain (`*.corp.*`).
_CORP_FQDN = _c(
    rf"(?<![\w.-])(?:{_LABEL}\.)*(?:corp|intra|intranet|internal)\.(?:{_LABEL}\.)*"
    r"(?:com|net|org|edu|gov|io|ai|dev|cloud|biz|info|[a-z]{2})(?![\w-]|\.[\w-])",
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
    r"\.ssh[/\\]+(?!(?:known_hosts|config|authorized_keys|environment|rc)(?![\w.-]))[\w.-]+"
    r"|[\w.-]*(?:_(?:ed25519|ecdsa|rsa|dsa)|deploy[_-]key)(?:\.pub)?"
    r"|\.aws[/\\]+(?:credentials|config)"
    r"|\.config[/\\]+gcloud(?:[/\\]+[\w.@-]+)*"
    r"|application_default_credentials\.json"
    r"|\.kube[/\\]+config[\w.-]*"
    r"|kubeconfig(?:[-_.][\w.-]+)?\.ya?ml|(?<=[/\\])kubeconfig[\w.-]*"
    r"|service[-_]?account[\w.-]*\.json"
    r"|\.docker[/\\]+config\.json"
    r"|\.(?:netrc|git-credentials|pgpass|pypirc|npmrc|vault-token|s3cfg|boto|databrickscfg)"
    r"|\.azure(?:[/\\]+[\w.-]+)*"
    r"|\.cache[/\\]+huggingface[/\\]+(?:token|stored_tokens)|\.huggingface[/\\]+token"
    r"|\.(?:oci|ngc)[/\\]+config|\.config[/\\]+gh[/\\]+hosts\.ya?ml"
    r"|[\w.-]+\.(?:ppk|p12|pfx|jks|keystore)"
    r")(?![\w-])"
)
# The value of an environment variable that points at credentials, whatever its path.
_CREDENTIAL_ENV = _c(
    r"(?<![\w-])(?:GOOGLE_APPLICATION_CREDENTIALS|AWS_SHARED_CREDENTIALS_FILE|AWS_CONFIG_FILE"
    r"|AWS_WEB_IDENTITY_TOKEN_FILE|KUBECONFIG|AZURE_CONFIG_DIR|AZURE_CLIENT_CERTIFICATE_PATH"
    r"|CLOUDSDK_CONFIG|DOCKER_CONFIG|HF_TOKEN_PATH)[\"']?[ \t]*[:=][ \t]*[\"']?"
    r"([^\s\"',;<][^\s\"',;]*)"
)
# /home and /Users, Solaris' /export/home, Silverblue's /var/home, FreeBSD's /usr/home,
# C:\Users, and a WSL distribution's /home seen from Windows (\\wsl$\<distro>\home).
_HOME_PATH = _c(
    r"(?:(?<![\w.-])(?:/(?:export|var|usr))?/(?:home|Users)|(?<![\w])[A-Za-z]:(?:\\+|/)Users"
    r"|(?<![\w\\])\\\\+(?i:wsl\$|wsl\.localhost)\\+[\w.-]+\\+home)[/\\]+"
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
# user@10.0.0.5, user@[fe80::1], user@shorthost; not pkg@2.0.6, actions/checkout@v4, x@latest,
# nor llama-bench's own test names (tg64@pp128, pp512@d128: generation at a prompt depth).
_USER_AT = _c(
    r"(?<![\w.%+/-])(?!(?:pp|tg|pg)\d+@(?:pp|tg|pg|d)\d+(?![\w.-]))"
    r"([A-Za-z_][A-Za-z0-9_.-]{0,31})@(?=(?:\d{1,3}\.){3}\d|\["
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
    r"|github_pat_[A-Za-z0-9_]{60,}|AIza[0-9A-Za-z_-]{35}|ya29\.[0-9A-Za-z_-]{20,}"
    # OpenAI project and Anthropic keys, DigitalOcean, npm and Atlassian API tokens
    r"|sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}|sk-ant-[a-z]{2,8}\d{0,3}-[A-Za-z0-9_-]{20,}"
    r"|do[opr]_v1_[a-f0-9]{64}|npm_[A-Za-z0-9]{36}|ATATT[A-Za-z0-9_+/=-]{20,})"
)
# A JWT whole, signature included (detect-secrets' pattern stops before the signature).
_JWT = _c(r"(?<![\w-])eyJ[\w-]{5,}\.eyJ[\w-]{2,}\.[\w-]{8,}(?![\w-])")
# Keys whose value is a secret whatever it looks like; an Azure storage account name.
_KEYED_SECRET = _c(
    r"(?<![\w-])(?:DD_API_KEY|DD_APP_KEY|DATADOG_API_KEY|DATADOG_APP_KEY|AccountName"
    r"|SharedAccessSignature|AccountKey)[\"']?[ \t]*[:=][ \t]*[\"']?([^\s\"';,<][^\s\"';,]{2,})"
)
_AWS_SECRET = _c(
    r"(?i)aws_secret_access_key[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"
)


# --- versions that look like addresses ------------------------------------------------------

_VERSION_CONTEXT = _c(
    r"(?i)(?:\b(?:version|ver|v|driver|build|firmware|fw|bios|vbios|release|rev|revision"
    r"|kernel|rocm|cuda|cudnn|tensorrt|nccl|cublas|mkl|onednn|openvino|opencl|vulkan|agesa"
    r"|microcode)\b|(?<![\w.])v)[\s:=#\"'(]*$"
)


_SVG_PATH_CHARS = re.compile(r"[MmLlHhVvCcSsQqTtAaZz\d.,\s-]*")
_SVG_COMMANDS = re.compile(r"[MmLlHhVvCcSsQqTtAaZz]")


def _inside_svg_path(before: str) -> bool:
    """SVG path data (`c.74.27 1.55.44 2.41.44.82`: an icon in a built page) runs numbers
    together that read as dotted quads. Everything since the last quote being path commands
    and numbers, with several of each, is drawing, not an address."""
    tail = before.rsplit('"', 1)[-1]
    return (
        _SVG_PATH_CHARS.fullmatch(tail) is not None
        and len(_SVG_COMMANDS.findall(tail)) >= 3
        and sum(ch.isdigit() for ch in tail) >= 6
    )


def _not_after_version_word(before: str) -> bool:
    """`driver 1.2.3.4` is a version and path data is a drawing; an address elsewhere on
    the line is still found."""
    return _VERSION_CONTEXT.search(before) is None and not _inside_svg_path(before)


# --- hardware identifiers -------------------------------------------------------------------

_UUID = r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"
# nvidia-smi -L / -q: GPU-<uuid>; MIG devices: MIG-<uuid> (R470+) or MIG-GPU-<uuid>/gi/ci.
_GPU_UUID = _c(rf"(?<![\w-])(?i:MIG-GPU-{_UUID}(?:/\d+){{0,2}}|(?:GPU|MIG)-{_UUID})(?![\w-])")
# A bare UUID names one thing in the world (a DMI system, a boot, a subscription, a GPU):
# nothing the lab publishes is a UUID, so every one is a tell.
_BARE_UUID = _c(rf"(?<![\w-]){_UUID}(?![\w-])")
# The nil and max UUIDs (RFC 9562) and the example every tutorial copies name nothing.
_DOC_UUIDS = frozenset(
    {
        "00000000-0000-0000-0000-000000000000",
        "ffffffff-ffff-ffff-ffff-ffffffffffff",
        "123e4567-e89b-12d3-a456-426614174000",
        "123e4567-e89b-42d3-a456-556642440000",
    }
)


def _real_uuid(value: str) -> bool:
    return value.lower() not in _DOC_UUIDS


# Serials and board ids, by the label the tools print before them (nvidia-smi -q: "Serial
# Number : 1324...", "Board Id : 0x...", rocm-smi --showserial: "Serial Number: ...",
# dmidecode: "Serial Number: ...", "Asset Tag: ...", sysfs/json keys: serial_number=...).
_SERIAL = _c(
    r"(?i)\b(?:(?:board|baseboard|chassis|system|product|module|gpu|card|device|disk|drive)"
    r"[ _-]?)?(?:serial(?:[ _-]?(?:number|num|no\.?))?|board[ _-]?id|asset[ _-]?tag"
    r"|unique[ _-]?id|(?:node|port|system[ _]image)[ _-]?guid)\b[\"']?"
    r"[ \t]*(?:\([\w ]{1,16}\)[ \t]*)?(?:[:=]|\t)[ \t]*[\"']?"
    r"([/A-Za-z0-9][A-Za-z0-9._/-]{3,63})(?![\w-])"
)
_NOT_A_SERIAL = frozenset(
    {
        "not specified",
        "none",
        "n/a",
        "na",
        "unknown",
        "default",
        "default string",
        "to be filled by o.e.m.",
        "0123456789",
        "00000000",
        "0x0000000000000000",
        "not supported",
        "not available",
        "system serial number",
        "chassis serial number",
    }
)


def real_serial(value: str) -> bool:
    """Vendors fill unset fields with stock words ("Default string", "Not Specified")."""
    lowered = value.lower()
    if lowered in _NOT_A_SERIAL or lowered.startswith(("not", "n/a", "none")):
        return False
    return any(c.isdigit() for c in value) and not set(lowered) <= set("0x.-")


# 00:1a:2b:3c:4d:5e, 00-1A-2B-3C-4D-5E, 001a.2b3c.4d5e (Cisco); not clocks or IPv6.
_MAC = _c(
    r"(?<![\w:.-])(?:[0-9A-Fa-f]{2}([:-])[0-9A-Fa-f]{2}(?:\1[0-9A-Fa-f]{2}){4}"
    r"|[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4})(?![\w:.-])"
)


def _real_mac(value: str) -> bool:
    """All-zero and broadcast addresses name no interface; `1000.1000.1000` is a version."""
    digits = {c for c in value.lower() if c not in ":-."}
    if "." in value and not digits & set("abcdef"):
        return False
    return digits not in ({"0"}, {"f"})


# --- ssh keys -------------------------------------------------------------------------------

_SSH_FINGERPRINT = _c(
    r"(?<![\w+/])(?:SHA256:[A-Za-z0-9+/]{43}=?(?![A-Za-z0-9+/=])"
    r"|(?:MD5:)?[0-9a-f]{2}(?::[0-9a-f]{2}){15}(?![\w:]))"
)
_SSH_PUBLIC_KEY = _c(
    r"(?<![\w-])(?:ssh-(?:rsa|dss|ed25519|ed448)|ecdsa-sha2-nistp(?:256|384|521)"
    r"|sk-(?:ssh-ed25519|ecdsa-sha2-nistp256)@openssh\.com)[ \t]+AAAA[A-Za-z0-9+/]{16,}={0,3}"
    r"(?:[ \t]+[\w.@+-]{1,100})?"
)

# --- kubernetes -----------------------------------------------------------------------------

# kube's SafeEncodeString alphabet (no vowels, no 0 1 3): replica-set hashes, pod suffixes.
_KUBE = "[bcdfghjklmnpqrstvwxz2456789]"
_K8S_NODE = _c(
    r"(?<![\w.-])(?:"
    r"gk[e3]-[a-z0-9-]{1,60}?-[0-9a-f]{8}-[a-z0-9]{4}"  # GKE, GKE Autopilot (gk3-)
    r"|aks-[a-z0-9]{1,12}-\d{6,10}-(?:vmss[0-9a-z]{6}|\d{1,3})"  # AKS
    r"|k8s-[a-z0-9]{1,16}-\d{6,10}-(?:vmss[0-9a-z]{6}|\d{1,3})"  # acs-engine / aks-engine
    r"|eks-[a-z0-9-]{1,60}?-[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}"  # EKS node groups
    r")(?![\w-])"
)
# A pod name is a free-form prefix plus kube's hashes; only where the text says pod/node
# (or a `kubectl get pods` row follows) is that shape a name rather than a word.
_K8S_POD = _c(
    r"(?i:\b(?:pod(?:[_-]?name)?s?|hostname|node(?:[_-]?name)?|exec(?:[ \t]+-\w+)*)\b[\"']?"
    r"[ \t]*[:=/ ][ \t]*[\"']?)"
    rf"([a-z0-9][a-z0-9-]{{0,50}}?(?:-{_KUBE}{{6,10}})?-{_KUBE}{{5}})(?![\w.-])"
    rf"|^[ \t]*([a-z0-9][a-z0-9-]{{0,50}}?-{_KUBE}{{6,10}}-{_KUBE}{{5}})(?=[ \t]+\d+/\d+[ \t])",
    re.MULTILINE,
)

# --- cloud accounts -------------------------------------------------------------------------

_CLOUD_ACCOUNT = _c(
    r"(?<![\w-])(?:"
    # ARNs of every partition, with or without an account (s3 buckets have none)
    r"arn:aws[\w-]*:[\w-]+:[\w-]*:\d{0,12}:[\w/:.+=@,-]+"
    # ECR registries carry the account id; GCR / Artifact Registry the project
    r"|\d{12}\.dkr\.ecr\.[\w.-]+"
    r"|(?:[a-z]{2,}\.)?gcr\.io/[a-z][a-z0-9-]{4,28}[a-z0-9]"
    r"|[a-z0-9-]+-docker\.pkg\.dev/[a-z][a-z0-9-]{4,28}[a-z0-9]"
    # GCP resource names, kube contexts (gke_<project>_<zone>_<cluster>)
    r"|projects/[a-z][a-z0-9-]{4,28}[a-z0-9](?=/(?:zones|regions|locations|global|instances"
    r"|serviceAccounts|secrets|topics|subscriptions|datasets|repositories|clusters)\b)"
    r"|gke_[a-z][a-z0-9-]{4,28}[a-z0-9]_[a-z0-9-]+_[\w-]+"
    # Azure: /resourceGroups/<rg>, the AKS node resource group MC_<rg>_<cluster>_<region>
    r"|(?i:resourceGroups)/[\w.()-]{1,90}"
    r"|MC_[\w.()-]{1,90}?_[\w.-]{1,63}_[a-z0-9]{3,30}"
    # object storage buckets name their owner
    r"|(?:s3|gs|s3a|s3n|az|abfss?|wasbs?)://[\w.@-]+"
    # storage endpoints carry the account or bucket name
    r"|[a-z0-9][a-z0-9-]{1,62}\.(?:blob|file|queue|table|dfs)\.core\.windows\.net"
    r"|[a-z0-9][a-z0-9.-]{1,62}\.s3(?:[.-][a-z0-9-]+)?\.amazonaws\.com"
    r")(?![\w-])"
)
# Values after the flags and keys the cloud CLIs use for them. The bare words "cluster" and
# "resource group" are left alone: benchlab's own scheduler has resource groups.
_CLOUD_NAMED = _c(
    r"(?i:(?<![\w-])(?:--(?:project|project-id|subscription|resource-group|cluster|cluster-name"
    r"|account-id|tenant|context|registry-name|workspace-name)|\buse-context"
    r"|(?:project[_-]?id|projectId|subscription[_-]?id|subscriptionId|tenant[_-]?id|tenantId"
    r"|resourceGroup(?:Name)?|nodeResourceGroup|cluster[_-]?name|clusterName|account[_-]?id"
    r"|accountId|\"Account|current-context"
    r"|(?:GOOGLE_CLOUD|GCLOUD|CLOUDSDK_CORE|GCP)_PROJECT|AZURE_(?:SUBSCRIPTION_ID|TENANT_ID"
    r"|RESOURCE_GROUP)|AWS_ACCOUNT_ID|AWS_(?:DEFAULT_)?PROFILE|aws_account"
    r"|(?:EKS_|AKS_|GKE_)?CLUSTER_NAME)[\"']?[ \t]*[:=]"
    r"|^[ \t]*project[ \t]*=|\bclusters[ \t]+get-credentials)"
    r"[ \t]*=?[ \t]*[\"']?)"
    r"([A-Za-z0-9][\w.:/@()-]{1,127}?)(?=[\"',;)\]}]|\s|$)",
    re.MULTILINE,
)
# `az ... -g <rg> -n <cluster>`, `aws eks ... --name <cluster>`: generic flags, so only on a
# line that names the CLI (the `context` check) do they name a resource group or cluster.
_CLI_NAME_FLAG = _c(
    r"(?<![\w-])(?:-[gn]|--name)(?:[ \t]+|=)[\"']?([A-Za-z0-9][\w.()-]{0,89})(?![\w.()-])"
)
_CLOUD_CLI = _c(r"\b(?:az|eks|aks)\b")


def _after_cloud_cli(before: str) -> bool:
    return _CLOUD_CLI.search(before) is not None


_NOT_A_NAME = frozenset(
    {"default", "none", "null", "true", "false", "local", "minikube", "kind", "docker-desktop"}
)


_CODE_VALUE = _c(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\(.*)?")


def real_name(value: str) -> bool:
    """Stock names (`default`, `minikube`, `kind`), placeholders and code name nobody's cloud.

    `project_id=args.project` in a source file is an attribute, not a project: a dotted
    identifier is read as code (cloud names with a dot in them are rare enough to lose).
    """
    if value.lower() in _NOT_A_NAME or value.startswith("$"):
        return False
    return _CODE_VALUE.fullmatch(value) is None


# --- paths that carry a site or user name ---------------------------------------------------

# The rule: a path is a tell where people, not software, name its components. That is
# below a home directory (`~/models/x.gguf`, `~alice/`, `$HOME/...`, `%USERPROFILE%\\...`),
# below a site mount root (/mnt, /data, /scratch, /nfs, /lustre, ... : what follows is a
# user, team, project or host name), below any Windows drive except its system folders,
# and in any object-store URL. Paths under system roots (/usr, /opt, /etc, /tmp, /var,
# /proc, /dev, /workspace) and tool dot-dirs (`~/.cache/...`) are named by software
# and are left alone (root's own checkouts and CI workspaces are `cluster_tells`'); /home
# and C:\\Users belong to the home-path class.
_SEG = r"[\w.@+%~-]+"
_SITE_ROOTS = (
    r"mnt|media|data\d*|datasets?|scratch\d*|nfs|lustre\d*|gpfs|fsx|efs|beegfs|cephfs|ceph"
    r"|nas|raid\d*|storage|shared|share|srv|work|projects?|groups?|global|lus|hpc|cluster"
    r"|Volumes|net"
)
_SITE_PATH = _c(
    r"(?:"
    rf"(?<![\w.~/\\:$%>-])/(?:{_SITE_ROOTS})(?:/{_SEG})+"
    rf"|(?<![\w.~/\\$%-])(?:~[A-Za-z_][\w.-]{{0,31}}(?:/{_SEG})+|~/(?!\.){_SEG}(?:/{_SEG})*"
    rf"|(?:\$HOME|\$\{{HOME\}}|%USERPROFILE%|%HOMEPATH%)[/\\]+(?!\.)[\w.@+-]+(?:[/\\]+[\w.@+-]+)*)"
    # a drive path: two components at least, or one file with an extension (`C:\\x.gguf`),
    # so that `a:\\n` in a string literal of YAML is not a path
    r"|(?<![\w.%-])[A-Za-z]:(?:\\\\?|/)"
    r"(?!(?:Windows|Program Files|ProgramData|Users|\$Recycle\.Bin)(?![\w.-]))"
    r"(?:[\w.@+-]+(?:(?:\\\\?|/)[\w.@+-]+)+|[\w@+-][\w.@+-]*\.[A-Za-z0-9]{1,12})"
    r")(?![\w-])"
)


# --- names that keep no key context ---------------------------------------------------------

# A Windows share names its server: \\fileserver01\models\x.gguf (not \\?\ nor \\.\ device
# paths, nor \\wsl$\, which is a home path when it reaches one). Two characters at
# least in each part: `\\bword\\b` and `[\\s\\-]` in an escaped regex are not shares.
_UNC = _c(
    r"(?<![\w\\:])\\{2,}(?!(?i:wsl\$|wsl\.localhost)\\)[A-Za-z0-9][\w-]{1,62}"
    r"(?:\\+[\w$][\w$.@+-]+)+"
)
_SHARE_URL = _c(r"(?<![\w+.-])(?i:smb|cifs|nfs|afp|sftp|webdavs?)://[^\s\"'<>;,)]+")
# Public services always have a dotted name: a URL whose host is one label (`gitbox`,
# `buildhost3`) names a machine on somebody's network. Its user part names a person.
_NET_SCHEME = (
    r"(?<![\w+.-])(?i:https?|ssh|git|git\+ssh|ssh\+git|wss?|grpcs?|redis|rediss|postgres(?:ql)?"
    r"|mysql|mongodb|amqps?|rsync|tcp|ftp)://"
)
_URL_HOST = _c(
    rf"{_NET_SCHEME}(?:[^\s/@:\"']+(?::[^\s/@\"']*)?@)?([A-Za-z][A-Za-z0-9-]{{0,62}})(?![\w.-])"
)
_URL_USER = _c(rf"{_NET_SCHEME}([A-Za-z_][\w.-]{{0,31}})(?=@|:[^\s/@\"']*@)")
_NOT_A_HOST = frozenset({"localhost", "host", "hostname", "server", "example", "x", "ip"})


def _real_host(name: str) -> bool:
    return name.lower() not in _NOT_A_HOST


# ssh's own messages and options name the hosts and the account it used.
_SSH_HOST = _c(
    r"(?:\bconnect to host|\bProxyJump[ \t]*=?|(?<![\w-])-J|\bjump[ -]?host:?)[ \t]+"
    r"(?:[\w.-]+@)?([A-Za-z][\w.-]{0,252}[A-Za-z0-9])(?![\w.-])"
)
_VIA_HOST = _c(r"\b(?:via|through)[ \t]+([A-Za-z][\w-]*(?:\.[A-Za-z0-9-]+)+)(?![\w-])")
# `as erin;` or `as hiro to the box`, not `with ssh(...) as device:` in code.
_AS_USER = _c(
    r"\bas[ \t]+(?:user[ \t]+)?([a-z_][a-z0-9_-]{1,31})"
    r"(?=[ \t]*(?:[;,)]|$)|[ \t]+(?:on|to|at|via|from|with|for|into)\b)",
    re.MULTILINE,
)
_SSH_WORD = _c(r"(?i)\bssh\b|\bscp\b|\bsftp\b|\brsync\b")
_NOT_A_LOGIN = frozenset(
    {
        *GENERIC_USERS,
        "a",
        "an",
        "the",
        "well",
        "expected",
        "follows",
        "needed",
        "usual",
        "is",
        "it",
        "its",
        "if",
        "of",
        "such",
        "soon",
        "long",
        "much",
        "many",
        "far",
        "before",
        "above",
        "below",
        "json",
        "text",
        "root",
    }
)


def _after_ssh(before: str) -> bool:
    return _SSH_WORD.search(before) is not None


def _real_login(name: str) -> bool:
    return name.lower() not in _NOT_A_LOGIN


# Windows security ids of domain and Entra accounts (well-known ids like S-1-5-18 are not).
_SID = _c(r"(?<![\w-])S-1-(?:5-21|12-1)(?:-\d{1,10}){3,4}(?![\w-])")
# A pod of a Deployment: <name>-<replica-set hash>-<pod hash>, in kube's alphabet.
_BARE_POD = _c(
    rf"(?<![\w./-])[a-z][a-z0-9]*(?:-[a-z0-9]+){{0,6}}?-({_KUBE}{{6,10}})-({_KUBE}{{5}})(?![\w.-])"
)


def _pod_hashes(value: str) -> bool:
    """Kube's hashes mix digits and letters; a word or a number in their place is a name."""
    parts = value.rsplit("-", 2)[-2:]
    joined = "".join(parts)
    return any(c.isdigit() for c in parts[0]) and any(c.isalpha() for c in joined)


# Drive, board and GPU serials as bare values: upper-case letters and digits mixed.
_BARE_SERIAL = _c(r"(?<![\w./:-])[A-Z][A-Z0-9]{9,19}(?![\w.-])")


def _serial_shape(value: str) -> bool:
    """Three letters and four digits at least, two of the letters past F: a hex number
    with a letter in front (`S0123456789AB`, a made-up id) is not read as a serial."""
    letters = sum(c.isalpha() for c in value)
    digits = sum(c.isdigit() for c in value)
    return letters >= 3 and digits >= 4 and len(set(value) - set("0123456789ABCDEF")) >= 2


# An AWS account id is twelve digits; a date-time stamp of twelve digits is not one.
_BARE_ACCOUNT = _c(r"(?<![\w.:/+,-])\d{12}(?![\w.:/,-])")
_STAMP = _c(r"(?:19|20)\d\d(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])(?:[01]\d|2[0-3])[0-5]\d")


def _account_shape(value: str) -> bool:
    return _STAMP.fullmatch(value) is None and len(set(value)) > 2


def _not_a_quantity(before: str) -> bool:
    """`size = 123456789012` and `123456789012 bytes` are amounts, not accounts."""
    return re.search(r"(?i)\b(?:size|bytes?|count|total|sum|ns|us|ms)[\s\"':=]*$", before) is None


@functools.cache
def builtin_detectors() -> tuple[Detector, ...]:
    """The tell classes every policy starts from (redaction.yaml adds to them); the policy
    adds `cluster_tells.cluster_detectors` after them (node pools, resource groups, serial
    elements, checkout paths and inline topology rows)."""
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
        Detector(
            "credential-env",
            CREDENTIAL_PATH,
            _CREDENTIAL_ENV,
            "<path:credentials>",
            numbered=False,
            group=1,
            gate=_gate(r"CREDENTIALS|_CONFIG|KUBECONFIG|CERTIFICATE_PATH|TOKEN_(?:FILE|PATH)"),
        ),
        Detector(
            "ssh-public-key",
            SSH_KEY,
            _SSH_PUBLIC_KEY,
            "<ssh-key>",
            numbered=False,
            gate=_gate(r"AAAA"),
        ),
        Detector(
            "ssh-fingerprint",
            SSH_KEY,
            _SSH_FINGERPRINT,
            "<ssh-key>",
            numbered=False,
            gate=_gate(r"SHA256:|[0-9a-f]{2}:[0-9a-f]{2}:[0-9a-f]{2}:[0-9a-f]{2}:[0-9a-f]{2}:"),
        ),
        *_infrastructure_detectors(),
        *_context_free_detectors(),
    )


def _infrastructure_detectors() -> tuple[Detector, ...]:
    """Hardware ids, cluster and cloud names, hosts, zones, machine types, topology,
    addresses, home and site paths, user@host."""
    return (
        Detector(
            "gpu-uuid", HARDWARE_ID, _GPU_UUID, "gpu", gate=_gate(r"[Gg][Pp][Uu]-|[Mm][Ii][Gg]-")
        ),
        Detector(
            "serial",
            HARDWARE_ID,
            _SERIAL,
            "serial",
            group=1,
            check=real_serial,
            gate=_gate(r"erial|ERIAL|oard|OARD|sset|SSET|nique|NIQUE|uid|UID"),
        ),
        Detector("mac-address", HARDWARE_ID, _MAC, "mac", check=_real_mac),
        Detector("k8s-node", K8S, _K8S_NODE, "node", gate=_gate(r"gk[e3]-|aks-|k8s-|eks-")),
        Detector(
            "k8s-pod",
            K8S,
            _K8S_POD,
            "pod",
            group=-1,
            gate=_gate(r"(?i)pod|hostname|node|exec|\d/\d"),
        ),
        Detector(
            "cloud-account",
            CLOUD_ACCOUNT,
            _CLOUD_ACCOUNT,
            "cloud",
            gate=_gate(
                r"arn:|\.dkr\.|gcr\.io|pkg\.dev|projects/|gke_|esource[Gg]roups|MC_|://"
                r"|\.core\.windows\.net|amazonaws\.com"
            ),
        ),
        Detector(
            "cloud-named",
            CLOUD_ACCOUNT,
            _CLOUD_NAMED,
            "cloud",
            group=1,
            check=real_name,
            gate=_gate(
                r"roject|ROJECT|ubscription|UBSCRIPTION|enant|ENANT|esource|ESOURCE|luster"
                r"|LUSTER|ccount|CCOUNT|ontext|ONTEXT|egistry|orkspace|ROFILE"
            ),
        ),
        Detector(
            "cloud-cli-name",
            CLOUD_ACCOUNT,
            _CLI_NAME_FLAG,
            "cloud",
            group=1,
            check=real_name,
            context=_after_cloud_cli,
            gate=_gate(r"\b(?:az|eks|aks)\b"),
        ),
        Detector("uuid", HARDWARE_ID, _BARE_UUID, "uuid", check=_real_uuid),
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
            gate=_gate(
                r"(?i)\.(?:local|lan|internal|intranet|intra|corp|home|ts\.net|lab|private|svc)"
            ),
        ),
        Detector(
            "corp-fqdn",
            HOST,
            _CORP_FQDN,
            "host",
            gate=_gate(r"orp\.|ORP\.|ntra|NTRA|nternal\.|NTERNAL\."),
        ),
        Detector("cloud-instance", INSTANCE, _INSTANCE, "instance"),
        Detector("cloud-zone", ZONE, _ZONE, "zone"),
        Detector("machine-type", MACHINE_TYPE, _MACHINE_TYPE, "machine-type"),
        Detector("gpu-topology", TOPOLOGY, _TOPOLOGY, "<topology>", numbered=False),
        Detector("pci-bus-id", TOPOLOGY, _PCI, "pci"),
        Detector("ipv4", IP, _IPV4, "ip", context=_not_after_version_word),
        Detector("ipv6", IP, _IPV6, "ip", check=_ipv6_check),
        Detector("home-path", HOME_PATH, _HOME_PATH, "<path:home>", numbered=False),
        Detector(
            "site-path",
            SITE_PATH,
            _SITE_PATH,
            "<path:site>",
            numbered=False,
            gate=_gate(
                rf"/(?:{_SITE_ROOTS})/|~|\$HOME|\$\{{HOME|%USERPROFILE%|%HOMEPATH%|[A-Za-z]:[\\/]"
            ),
        ),
        Detector("user-at", USER, _USER_AT, "user", group=1, check=_not_generic_user),
    )


def _context_free_detectors() -> tuple[Detector, ...]:
    """Tells that keep no key context: new token kinds, shares, one-label hosts in URLs,
    ssh's own messages, Windows SIDs, bare pods, serials and account ids."""
    return (
        Detector("jwt", SECRET, _JWT, "<secret>", numbered=False, gate=_gate(r"eyJ")),
        Detector(
            "keyed-secret",
            SECRET,
            _KEYED_SECRET,
            "<secret>",
            numbered=False,
            group=1,
            gate=_gate(r"_KEY|AccountName|SharedAccess|AccountKey"),
        ),
        Detector("unc-share", SITE_PATH, _UNC, "<path:site>", numbered=False, gate=_gate(r"\\\\")),
        Detector("share-url", SITE_PATH, _SHARE_URL, "<path:site>", numbered=False),
        Detector("url-host", HOST, _URL_HOST, "host", group=1, check=_real_host, gate=_gate("://")),
        Detector(
            # Fixed, without a colon: `://<user:1>@` would read as a password in a URL.
            "url-user",
            USER,
            _URL_USER,
            "<user>",
            numbered=False,
            group=1,
            check=_not_generic_user,
            gate=_gate("://"),
        ),
        Detector("ssh-host", HOST, _SSH_HOST, "host", group=1, check=_real_host),
        Detector(
            "ssh-via-host", HOST, _VIA_HOST, "host", group=1, context=_after_ssh, gate=_SSH_WORD
        ),
        Detector(
            "ssh-as-user",
            USER,
            _AS_USER,
            "user",
            group=1,
            check=_real_login,
            context=_after_ssh,
            gate=_SSH_WORD,
        ),
        Detector("windows-sid", USER, _SID, "sid", gate=_gate(r"S-1-")),
        Detector("bare-pod", K8S, _BARE_POD, "pod", check=_pod_hashes),
        Detector("bare-serial", HARDWARE_ID, _BARE_SERIAL, "serial", check=_serial_shape),
        Detector(
            "bare-account",
            CLOUD_ACCOUNT,
            _BARE_ACCOUNT,
            "cloud",
            check=_account_shape,
            context=_not_a_quantity,
        ),
    )


def secret_detectors() -> list[Detector]:
    """detect-secrets' regex plugins, one detector per plugin, named after it (their
    patterns kept in the user's cache: `redact.secret_patterns`)."""
    return [
        Detector(name, SECRET, re.compile(pattern, flags), "<secret>", numbered=False, group=group)
        for name, pattern, flags, group in secret_patterns()
    ]


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
