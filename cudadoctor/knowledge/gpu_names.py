"""NVIDIA GPU marketing name -> compute capability, for names as nvidia-smi, NVML and torch print them
("NVIDIA GeForce RTX 3060 Laptop GPU", "Tesla V100-SXM2-16GB", "NVIDIA H100 80GB HBM3", "GeForce GTX 1080").

Used where only a name is known (a pasted `collect_env` or `nvidia-smi`): a name gives the capability
for certain only when every product sold under it has one chip generation, so ambiguous names (GT 730:
Fermi 2.1 or Kepler 3.5; GT 640; GTX 660 OEM variants aside) give None rather than a guess.

Sources, per family (each entry below names its family):
- datacenter, workstation, GeForce, Jetson: NVIDIA "CUDA GPUs - Compute Capability",
  https://developer.nvidia.com/cuda-gpus, and for Kepler/Maxwell/Pascal/Volta parts
  https://developer.nvidia.com/cuda-legacy-gpus (shared cuda-facts §3 ✅);
- K80 = 3.7, K20/K40 = 3.5: an older copy of the same page (cuda-facts §3 ◐);
- Blackwell 10.0 (B200, GB200), 10.3 (B300, GB300), 12.0 (RTX 50xx, RTX PRO Blackwell), 12.1 (GB10),
  Jetson Thor 11.0 (sm_101 before CUDA 13): cuda-facts §3 (clang Cuda.cpp, CUDA 12.8/12.9/13.0 notes ✅);
- laptop GPUs share the desktop chip's capability (same page lists "GeForce RTX 3060 Laptop GPU" etc.);
  MX series and RTX 2050 (GA107, 8.6) from the same page's notebook rows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class GpuModel:
    cc: str  # "8.6"
    family: str  # "GeForce RTX 30 (Ampere)": the row's family, for the source note


# (pattern over the normalized name, capability, family). Normalized: upper case, "-" and "_" as
# spaces, runs of spaces collapsed, vendor words kept. Patterns are tried in order: specific first.
_S = r"(?:\s|$)"
_TABLE: list[tuple[str, str, str]] = [
    # --- Blackwell -------------------------------------------------------------------------------
    (r"\bGB10\b", "12.1", "Blackwell GB10 (DGX Spark)"),
    (r"\bG?B300\b", "10.3", "Blackwell datacenter (B300, GB300)"),
    (r"\bG?B200\b|\bB100\b", "10.0", "Blackwell datacenter (B100, B200, GB200)"),
    (r"\bRTX PRO \d{3,4}\b.*BLACKWELL|\bRTX PRO \d{3,4}\b", "12.0", "RTX PRO Blackwell workstation"),
    (r"\bRTX 50[5-9]0\b", "12.0", "GeForce RTX 50 (Blackwell)"),
    (r"\bTHOR\b|\bJETSON T[45]000\b", "11.0", "Jetson Thor (Blackwell)"),
    # --- Hopper ----------------------------------------------------------------------------------
    (r"\bGH200\b|\bH100\b|\bH200\b|\bH800\b|\bH20\b", "9.0", "Hopper (H100, H200, H800, H20, GH200)"),
    # --- Ada Lovelace ----------------------------------------------------------------------------
    (r"\bL40S?\b|\bL4\b|\bL20\b", "8.9", "Ada datacenter (L4, L20, L40, L40S)"),
    (r"\bRTX \d{4}(?: SFF)? ADA\b|\bRTX \d{4} ADA GENERATION\b", "8.9", "RTX Ada Generation workstation"),
    (r"\bRTX [2-5]000 ADA\b|\bRTX [2-5]000\b.*\bADA\b", "8.9", "RTX Ada Generation workstation"),
    (r"\bRTX 40[5-9]0\b", "8.9", "GeForce RTX 40 (Ada)"),
    # --- Ampere ----------------------------------------------------------------------------------
    (r"\bA100\b|\bA800\b|\bA30\b", "8.0", "Ampere datacenter (A100, A800, A30)"),
    (r"\bA40\b|\bA10G?\b|\bA16\b|\bA2\b", "8.6", "Ampere datacenter (A40, A10, A10G, A16, A2)"),
    (r"\bRTX A\d{3,4}\b|\bA\d{3,4} LAPTOP\b", "8.6", "RTX A-series workstation (Ampere)"),
    (r"\bRTX 30[5-9]0\b|\bRTX 2050\b", "8.6", "GeForce RTX 30 (Ampere; RTX 2050 is GA107)"),
    (r"\bMX570\b", "8.6", "GeForce MX570 (Ampere)"),
    (r"\bORIN\b", "8.7", "Jetson Orin (Ampere)"),
    # --- Turing ----------------------------------------------------------------------------------
    (r"\bT4\b|\bT4G\b", "7.5", "Turing datacenter (T4)"),
    (r"\bQUADRO RTX \d{4}\b|\bRTX [3-8]000\b", "7.5", "Quadro RTX (Turing)"),
    (r"\bTITAN RTX\b", "7.5", "TITAN RTX (Turing)"),
    (r"\bRTX 20[6-8]0\b", "7.5", "GeForce RTX 20 (Turing)"),
    (r"\bGTX 16[3-6]0\b", "7.5", "GeForce GTX 16 (Turing)"),
    (r"\bT(?:400|500|550|600|1000|1200|2000)\b", "7.5", "Quadro T-series (Turing)"),
    (r"\bMX[45]50\b", "7.5", "GeForce MX450/MX550 (Turing)"),
    # --- Volta -----------------------------------------------------------------------------------
    (r"\bV100S?\b|\bTITAN V\b|\bGV100\b", "7.0", "Volta (V100, TITAN V, Quadro GV100)"),
    (r"\bXAVIER\b", "7.2", "Jetson Xavier (Volta)"),
    # --- Pascal ----------------------------------------------------------------------------------
    (r"\bP100\b|\bGP100\b", "6.0", "Pascal GP100 (Tesla P100, Quadro GP100)"),
    (r"\bP40\b|\bP4\b|\bP6\b|\bP10\b", "6.1", "Pascal datacenter (P4, P6, P10, P40)"),
    (r"\bQUADRO P\d{3,4}\b|\bP\d{3,4} (?:WITH MAX Q|MAX Q)\b", "6.1", "Quadro Pascal (P400-P6000)"),
    (r"\bTITAN XP\b|\bTITAN X \(?PASCAL\)?", "6.1", "TITAN Xp / TITAN X (Pascal)"),
    (r"\bGTX 10[5-8]0\b|\bGT 1030\b|\bGT 1010\b", "6.1", "GeForce 10 (Pascal)"),
    (r"\bMX(?:150|230|250|330|350)\b", "6.1", "GeForce MX150-MX350 (Pascal)"),
    (r"\bTX2\b|\bJETSON TX2\b", "6.2", "Jetson TX2 (Pascal)"),
    # --- Maxwell ---------------------------------------------------------------------------------
    (r"\bM40\b|\bM60\b|\bM4\b|\bM6\b", "5.2", "Maxwell datacenter (M4, M6, M40, M60)"),
    (r"\bM10\b", "5.0", "Tesla M10 (Maxwell GM107)"),
    (r"\bQUADRO M[2-6]000\b|\bQUADRO M6000\b", "5.2", "Quadro M2000-M6000 (Maxwell GM20x)"),
    (r"\bQUADRO (?:K1200|K2200|K620|M1200|M2200|M1000M|M600M|M500M)\b", "5.0", "Quadro Maxwell GM10x"),
    (r"\bGTX TITAN X\b|\bTITAN X\b", "5.2", "GTX TITAN X (Maxwell)"),
    (r"\bGTX 9[5-8]0(?: TI)?\b(?!M)", "5.2", "GeForce GTX 900 (Maxwell GM20x)"),
    (r"\bGTX 9(?:65|70|80)M\b", "5.2", "GeForce GTX 965M-980M (Maxwell GM204)"),
    (r"\bGTX 9(?:50|60)M\b|\b9[234]0M\b|\b940MX\b|\b930MX\b|\bGTX 750(?: TI)?\b|\bGTX 745\b", "5.0", "Maxwell GM10x"),
    (r"\bMX1[13]0\b", "5.0", "GeForce MX110/MX130 (Maxwell)"),
    (r"\bJETSON NANO\b|\bTX1\b|\bTEGRA X1\b", "5.3", "Jetson Nano / TX1 (Maxwell)"),
    # --- Kepler ----------------------------------------------------------------------------------
    (r"\bK80\b", "3.7", "Tesla K80 (Kepler GK210)"),
    (r"\bK40[CM]?\b|\bK20[CMX]?\b|\bQUADRO K6000\b", "3.5", "Kepler GK110 (K20, K40, Quadro K6000)"),
    (r"\bGTX TITAN(?: BLACK| Z)?\b|\bGTX 780(?: TI)?\b", "3.5", "GeForce GTX TITAN / 780 (Kepler GK110)"),
    (r"\bGT 710\b|\bGT 720\b", "3.5", "GeForce GT 710/720 (Kepler GK208)"),
    (r"\bK10\b|\bK520\b|\bGRID K[12]\b|\bGTX 6[6-9]0(?: TI)?\b|\bGTX 770\b|\bGTX 760\b", "3.0", "Kepler GK10x"),
    (r"\bQUADRO K[45]000\b", "3.0", "Quadro K4000/K5000 (Kepler GK10x)"),
    (r"\bTK1\b|\bTEGRA K1\b", "3.2", "Jetson TK1 (Kepler)"),
]

_COMPILED = [(re.compile(p), cc, family) for p, cc, family in _TABLE]

# Names sold on chips of different generations: a capability from them would be a guess.
_AMBIGUOUS = re.compile(r"\bGT 730\b|\bGT 640\b|\bGT 630\b|\bGTX 660M\b|\bGT 740M\b|\bGT 750M\b")


def normalize(name: str) -> str:
    text = name.upper().replace("-", " ").replace("_", " ")
    text = text.replace("…", " ").replace("...", " ")
    return " ".join(text.split())


def lookup(name: str | None) -> GpuModel | None:
    """The capability of a GPU from its name, or None when the name is unknown or ambiguous."""
    if not name or not isinstance(name, str) or len(name) > 200:
        return None
    text = normalize(name)
    if _AMBIGUOUS.search(text):
        return None
    for pattern, cc, family in _COMPILED:
        if pattern.search(text):
            return GpuModel(cc, family)
    return None


def capability(name: str | None) -> str | None:
    model = lookup(name)
    return model.cc if model else None
