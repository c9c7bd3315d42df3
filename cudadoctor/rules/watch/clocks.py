"""Clocks: NVML's clock event reasons under load name thermal slowdown (CD705), the power cap (CD706) and
hardware slowdown or the power brake (CD707)."""

from __future__ import annotations

from cudadoctor.facts.watch import Timeline
from cudadoctor.model import Finding, msg
from cudadoctor.rules.catalogue import fix
from cudadoctor.rules.watch import stats
from cudadoctor.rules.watch.entries import HW_SLOW, POWER_CAP, THERMAL
from cudadoctor.rules.watch.stats import MIN_SAMPLES

THROTTLE_SHARE = 0.20  # a clock event reason in at least this share of loaded samples
LOADED_UTIL = 20  # samples at or above this utilisation count as "under load" for throttling (not idle)

# NVML clock event reasons (nvml.h, nvmlClocksEventReason*; the older name is ClocksThrottleReason)
SW_POWER_CAP = 0x4
HW_SLOWDOWN = 0x8
SW_THERMAL = 0x20
HW_THERMAL = 0x40
HW_POWER_BRAKE = 0x80


def throttling(tl: Timeline, index: int) -> list[Finding]:
    loaded = [
        g.clocks_event
        for _, g in stats.on_gpu(tl, index)
        if g.clocks_event is not None and g.util is not None and g.util >= LOADED_UTIL
    ]
    if len(loaded) < MIN_SAMPLES:
        return []
    out = []
    label = stats.gpu_label(tl, index)

    def share(mask: int) -> float:
        return sum(1 for r in loaded if r & mask) / len(loaded)

    if (s := share(SW_THERMAL | HW_THERMAL)) >= THROTTLE_SHARE:
        out.append(
            THERMAL.finding(
                title=msg(
                    "{gpu} slowed its clocks for heat in {share} % of loaded samples", gpu=label, share=f"{s * 100:.0f}"
                ),
                fix=[
                    fix("See the temperatures and the slowdown thresholds", "nvidia-smi -q -d TEMPERATURE,PERFORMANCE"),
                    fix(
                        "Improve cooling: airflow, fan curves, dust; in a closed case or a hot rack, space the cards",
                        "nvidia-smi --query-gpu=temperature.gpu,fan.speed,clocks.sm --format=csv -l 1",
                    ),
                ],
            )
        )
    if (s := share(HW_SLOWDOWN | HW_POWER_BRAKE)) >= THROTTLE_SHARE:
        out.append(
            HW_SLOW.finding(
                title=msg("{gpu}: hardware slowdown in {share} % of loaded samples", gpu=label, share=f"{s * 100:.0f}"),
                fix=[
                    fix("See which slowdown is active", "nvidia-smi -q -d PERFORMANCE"),
                    fix("Check the power supply and the GPU's power cables; check the temperature", "sudo dmesg"),
                ],
            )
        )
    if (s := share(SW_POWER_CAP)) >= THROTTLE_SHARE:
        limit = stats.gpu_info(tl, index)
        watts = limit.power_limit_mw / 1000 if limit and limit.power_limit_mw else None
        out.append(
            POWER_CAP.finding(
                title=msg(
                    "{gpu} ran at its power limit of {watts} W in {share} % of loaded samples"
                    if watts
                    else "{gpu} ran at its power limit in {share} % of loaded samples",
                    gpu=label,
                    watts=f"{watts:.0f}" if watts else "",
                    share=f"{s * 100:.0f}",
                ),
                fix=[
                    fix(
                        "Compare the limit with the card's default and maximum (raise it only within them)",
                        "nvidia-smi -q -d POWER",
                    )
                ],
            )
        )
    return out
