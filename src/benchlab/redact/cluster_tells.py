"""Cluster and checkout tells: node pools, resource groups, serial elements, checkout paths
and topology rows that sit inside a line (ARCHITECTURE.md, Publishing and redaction).

The policy runs these after `tells.builtin_detectors`; they have their own module
(tells.py is near the module size limit). Each is a shape a tool prints where the name
in it was chosen by a person or a cluster, never by what was measured:

- a node-pool or node-group name after the label or flag that carries it
  (`cloud.google.com/gke-nodepool=gpu-pool-a100`, `--nodegroup bench-ng`), and a GKE node
  name whose pool hash is not the usual eight hex digits (`gke-prod-pool-1-abc123-xyz9`);
- an Azure resource-group name by its naming convention (`rg-bench-prod-eastus`,
  `bench-rg-prod`): the bare words "resource group" are benchlab's scheduler's own, so the
  name's shape, not the words before it, is what is matched;
- a serial in an XML element or a property list (`<serial>ABC123</serial>`,
  `<key>serial_number</key><string>...</string>`), as lshw, libvirt and system_profiler write;
- a checkout below root's home (`/root/src/llama.cpp`; its dot dirs are software's) or a CI
  workspace (`/opt/ci/checkout/x`, `/opt/actions-runner/_work/x`, `/var/lib/jenkins/workspace/x`);
- an `nvidia-smi topo -m` row anywhere in a line, also with its tabs escaped inside a JSON
  string (`"GPU0\\t X \\tNV12\\t0-63"`), and the one-GPU row (`GPU0  X  0-31  0`).
"""

from __future__ import annotations

import re

from benchlab.redact.tells import (
    CLOUD_ACCOUNT,
    HARDWARE_ID,
    K8S,
    SITE_PATH,
    TOPOLOGY,
    Detector,
    real_name,
    real_serial,
)

_POOL_LABEL = re.compile(
    r"(?<![\w-])(?:cloud\.google\.com/gke-nodepool|eks\.amazonaws\.com/nodegroup"
    r"|alpha\.eksctl\.io/nodegroup-name|kubernetes\.azure\.com/agentpool|karpenter\.sh/nodepool"
    r"|agentpool|(?i:node[-_]?pool(?:[-_]?name)?|node[-_]?group(?:[-_]?name)?))"
    r"[\"']?[ \t]*[:=][ \t]*[\"']?([A-Za-z0-9][\w.-]{0,62})(?![\w.-])"
    r"|(?<![\w-])--(?:node-pool|nodepool-name|nodegroup(?:-name)?)(?:[ \t]+|=)[\"']?"
    r"([A-Za-z0-9][\w.-]{0,62})(?![\w.-])"
)
_GKE_NODE = re.compile(r"(?<![\w./-])gk[e3]-[a-z0-9-]{1,60}?-([a-z0-9]{5,10})-[a-z0-9]{4}(?![\w-])")
_RESOURCE_GROUP = re.compile(
    r"(?i)(?<![\w./-])(?:rg-[a-z0-9]+(?:-[a-z0-9]+){1,7}|(?:[a-z0-9]+-){1,4}rg(?:-[a-z0-9]+){0,4})"
    r"(?![\w./-])"
)
_SERIAL_ELEMENT = re.compile(
    r"(?i)<(?:serial(?:[_-]?(?:number|num|no))?|asset[_-]?tag|board[_-]?id)>[ \t]*"
    r"([^<\s][^<\n]{2,63}?)[ \t]*</"
    r"|<key>(?:serial[_ -]?number|IOPlatformSerialNumber|SerialNumber)</key>\s*"
    r"<string>([^<\s][^<\n]{2,63}?)</string>"
)
_SEG = r"[\w.@+%~-]+"
_CHECKOUT_PATH = re.compile(
    r"(?<![\w.~/\\:$%>-])(?:"
    rf"/root/(?!\.){_SEG}(?:/{_SEG})*"
    rf"|/opt/(?:{_SEG}/){{0,3}}?(?:checkouts?|_work|builds|workspace|repos)(?:/{_SEG})+"
    rf"|/var/lib/(?:jenkins|buildkite-agent|gitlab-runner)/(?:workspace|builds)(?:/{_SEG})+"
    rf"|/builds/{_SEG}(?:/{_SEG})+"
    r")(?![\w-])"
)
_LINK = r"(?:X|NV\d+|SYS|NODE|PHB|PXB|PIX|SOC)"
_SEP = r"(?:[ \t]|\\t)+"
_AFFINITY = r"\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*"
_TOPOLOGY_ROW = re.compile(
    rf"(?<![\w-])(?:GPU|NIC)\d+(?:{_SEP}{_LINK})+(?:{_SEP}{_AFFINITY})?(?![\w-])"
)
_TOKENS = re.compile(_SEP)
_LINK_TOKEN = re.compile(_LINK)
_AFFINITY_TOKEN = re.compile(_AFFINITY)


def _topology_row(value: str) -> bool:
    """A row holds its own `X` and another link, or its `X` and a CPU affinity: `GPU0 X` in
    prose alone is not a row."""
    tokens = _TOKENS.split(value)[1:]
    links = [t for t in tokens if _LINK_TOKEN.fullmatch(t)]
    if "X" not in links:
        return False
    return len(links) >= 2 or bool(tokens and _AFFINITY_TOKEN.fullmatch(tokens[-1]))


def _pool_hash(value: str) -> bool:
    """GKE's pool hash mixes digits and letters; a word in its place is part of a name."""
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _resource_group(value: str) -> bool:
    """`rg-` and `-rg` names, not a flag or version (`rg-1-2`: no letter past the `rg`)."""
    rest = re.sub(r"(?i)(?:^|-)rg(?:-|$)", "-", value)
    return any(c.isalpha() for c in rest)


def cluster_detectors() -> tuple[Detector, ...]:
    """The detectors of this module, in the order the policy runs them."""
    return (
        Detector(
            "node-pool",
            K8S,
            _POOL_LABEL,
            "pool",
            group=-1,
            check=real_name,
            gate=re.compile(r"(?i)pool|nodegroup|node-group|node_group"),
        ),
        Detector("gke-node", K8S, _GKE_NODE, "node", check=_pool_hash, gate=re.compile(r"gk[e3]-")),
        Detector(
            "resource-group",
            CLOUD_ACCOUNT,
            _RESOURCE_GROUP,
            "cloud",
            check=_resource_group,
            gate=re.compile(r"rg-|-rg|RG-|-RG"),
        ),
        Detector(
            "serial-element",
            HARDWARE_ID,
            _SERIAL_ELEMENT,
            "serial",
            group=-1,
            check=real_serial,
            gate=re.compile(r"erial|ERIAL|sset|SSET|oard|OARD"),
        ),
        Detector(
            "checkout-path",
            SITE_PATH,
            _CHECKOUT_PATH,
            "<path:site>",
            numbered=False,
            gate=re.compile(r"/root/|/opt/|/var/lib/|/builds/"),
        ),
        Detector(
            "topology-row",
            TOPOLOGY,
            _TOPOLOGY_ROW,
            "<topology>",
            numbered=False,
            check=_topology_row,
            gate=re.compile(r"GPU|NIC"),
        ),
    )
