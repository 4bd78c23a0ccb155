"""A fake machine for the agent's probes: a sysfs/proc tree under a temp root and
executable stand-ins for nvidia-smi and vcgencmd on a PATH of their own."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

CPU = "sys/devices/system/cpu"


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def fake_machine(
    root: Path,
    *,
    governor: str = "performance",
    cores: int = 2,
    load: str = "0.10 0.20 0.30 1/100 4242",
    swap_used_kb: int = 0,
    boost: str | None = None,
) -> Path:
    """A /proc + /sys tree describing a machine; returns its root."""
    write(root, f"{CPU}/online", f"0-{cores - 1}\n")
    for cpu in range(cores):
        write(root, f"{CPU}/cpu{cpu}/cpufreq/scaling_governor", governor + "\n")
        write(root, f"{CPU}/cpu{cpu}/cpufreq/scaling_cur_freq", "2000000\n")
    if boost is not None:
        write(root, f"{CPU}/cpufreq/boost", boost + "\n")
    write(root, "proc/loadavg", load + "\n")
    write(
        root,
        "proc/meminfo",
        f"MemTotal:  2000000 kB\nSwapTotal: 1048576 kB\nSwapFree:  {1048576 - swap_used_kb} kB\n",
    )
    return root


def rapl_zone(root: Path, zone: str, energy_uj: int, max_uj: int) -> Path:
    """One powercap zone (intel-rapl:N or a subzone intel-rapl:N:M)."""
    base = f"sys/class/powercap/{zone}"
    write(root, f"{base}/max_energy_range_uj", f"{max_uj}\n")
    return write(root, f"{base}/energy_uj", f"{energy_uj}\n")


def tool(bin_dir: Path, name: str, body: str) -> Path:
    """An executable Python script `name` in `bin_dir` (argv in sys.argv[1:])."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / name
    path.write_text(f"#!{sys.executable}\nimport sys\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def only(bin_dir: Path) -> str:
    """A PATH holding `bin_dir` and the directory of this interpreter (nothing else)."""
    return os.pathsep.join([str(bin_dir), os.path.dirname(sys.executable), "/bin", "/usr/bin"])


NVIDIA_SMI = """
query = [a for a in sys.argv[1:] if a.startswith("--query-gpu=")]
if query and "memory.used" in query[0]:
    print("150.00, 61, 2048")
    print("[N/A], 58, 1024")
elif query:
    print("150.00, 61")
else:
    sys.exit(6)
"""
"""Two GPUs: one draws 150 W and holds 2048 MiB, one reports no power and holds 1024 MiB."""

PMIC_ADC = """\
     3V7_WL_SW_A current(0)=0.00000000A
       3V3_SYS_A current(1)=0.50000000A
      VDD_CORE_A current(7)=2.00000000A
     3V7_WL_SW_V volt(8)=3.74426200V
       3V3_SYS_V volt(9)=3.30000000V
      VDD_CORE_V volt(15)=0.80000000V
         EXT5V_V volt(24)=5.12612000V
"""
"""`vcgencmd pmic_read_adc` as a Pi 5 prints it: 0.5 A x 3.3 V + 2 A x 0.8 V = 3.25 W."""


def vcgencmd(bin_dir: Path, state: Path) -> Path:
    """A vcgencmd whose get_throttled answers 0x0 on its first call and 0x50005 (under-
    voltage and throttling now and since boot) after: the board throttled during the run."""
    body = f"""
from pathlib import Path
state = Path({str(state)!r})
if sys.argv[1:] == ["pmic_read_adc"]:
    sys.stdout.write({PMIC_ADC!r})
elif sys.argv[1:] == ["get_throttled"]:
    calls = int(state.read_text()) if state.exists() else 0
    state.write_text(str(calls + 1))
    print("throttled=0x0" if calls == 0 else "throttled=0x50005")
else:
    sys.exit(2)
"""
    return tool(bin_dir, "vcgencmd", body)
