#!/usr/bin/env bash
# Run every GPU path of cudadoctor on a machine with an NVIDIA GPU and keep what it says (issue 19).
#
#   OUT=/tmp/real bash benchmarks/real_gpu.sh [steps|walls]     (default: both)
#
# Writes, under $OUT/real/: the machine's own facts (nvidia-smi, /proc/driver/nvidia, libraries), the
# real NVML/libcuda answers (tests/fakenvml/dump_real.py), `pytest -m gpu` with the kept report,
# check / check --full / bench / gpus in every format, triage of this machine's collect_env, ckpt on a
# CUDA-saved checkpoint, watch on a short training run, fleet under torchrun, and wall times of
# `check` and `gpus` beside `nvidia-smi` and `nvitop --once` (when installed). Each step is bounded.
set -u
OUT=${OUT:?set OUT to a folder}
R=$OUT/real
mkdir -p "$R"
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$(pwd) PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
CD="$PY -m cudadoctor"
step() {  # step NAME SECONDS CMD... : output to $R/NAME.txt, exit code and wall time to steps.tsv
    local name=$1 limit=$2; shift 2
    local t0 t1 rc
    t0=$(date +%s%N)
    timeout -k 5 "$limit" bash -c "$*" >"$R/$name.txt" 2>&1
    rc=$?
    t1=$(date +%s%N)
    printf '%s\t%s\t%d ms\n' "$name" "$rc" $(((t1 - t0) / 1000000)) | tee -a "$R/steps.tsv"
}
walls() {  # walls NAME N CMD... : N wall times of CMD (output discarded)
    local name=$1 n=$2; shift 2
    for _ in $(seq "$n"); do
        local t0 t1
        t0=$(date +%s%N); bash -c "$*" >/dev/null 2>&1; t1=$(date +%s%N)
        printf '%s\t%d ms\n' "$name" $(((t1 - t0) / 1000000)) >>"$R/walls.tsv"
    done
}

PART=${1:-all}
if [ "$PART" != walls ]; then
step machine 60 "uname -a; cat /etc/os-release | head -3; nvidia-smi; nvidia-smi -q; \
  cat /proc/driver/nvidia/version; ls -la /dev/nvidia* /proc/driver/nvidia/gpus/*; \
  cat /proc/driver/nvidia/gpus/*/information; ldconfig -p | grep -E 'libcuda|libnvidia-ml|libcudart'; \
  which nvcc && nvcc --version; $PY --version; $PY -m pip list 2>/dev/null | grep -i -E 'nvidia|torch|pynvml|psutil|click|rich'; \
  env | grep -E '^(CUDA|NVIDIA|LD_LIBRARY_PATH|PATH)' "
step nvidia_smi_xml 30 "nvidia-smi -q -x"
step dump_real 60 "$PY tests/fakenvml/dump_real.py"
step pytest_gpu 400 "CUDADOCTOR_SAVE_REPORT=$R/real_gpu_report.json $PY -m pytest -m gpu -q -p no:cacheprovider -rs"
step check 120 "$CD check"
step check_json 120 "$CD check --json"
step check_full 400 "$CD check --full"
step bench 400 "$CD bench --json"
step gpus 30 "$CD gpus"
step gpus_wide 30 "$CD gpus --wide"
step gpus_json 30 "$CD gpus --json"
step gpus_pick 30 "$CD gpus --pick 1"
step gpus_sort 30 "$CD gpus --sort-by-free"
step check_zh 120 "$CD check --lang zh_CN"
step collect_env 120 "$PY -m torch.utils.collect_env"
step triage 60 "$CD triage $R/collect_env.txt"
step triage_json 60 "$CD triage --json $R/collect_env.txt"
step ckpt_save 120 "$PY -c \"import torch; m = torch.nn.Linear(64, 8).cuda(); \
  torch.save({'model': torch.nn.DataParallel(m).state_dict(), 'opt': torch.optim.Adam(m.parameters()).state_dict()}, '/tmp/cuda_ckpt.pt')\""
step ckpt_inspect 120 "$CD ckpt inspect /tmp/cuda_ckpt.pt; echo rc=\$?; $CD ckpt inspect --json /tmp/cuda_ckpt.pt"
step ckpt_fix 120 "$CD ckpt fix /tmp/cuda_ckpt.pt --strip-prefix --out /tmp/cpu_ckpt.pt; echo rc=\$?; $CD ckpt inspect /tmp/cpu_ckpt.pt"
cat >/tmp/train_starved.py <<'EOF'
import time, torch
model = torch.nn.Sequential(torch.nn.Linear(4096, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
end = time.time() + 8
while time.time() < end:
    x = torch.randn(256, 4096)          # made on the CPU, slowly: the GPU waits
    time.sleep(0.05)
    loss = model(x.cuda()).sum(); opt.zero_grad(); loss.backward(); opt.step()
torch.cuda.synchronize()
EOF
cat >/tmp/train_busy.py <<'EOF'
import time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
end = time.time() + 8
while time.time() < end:
    for _ in range(20):
        a = (a @ a).clamp_(-1, 1)
    torch.cuda.synchronize()
EOF
step watch_starved 90 "$CD watch --interval 0.5 --no-status --json $R/watch_starved.json -- $PY /tmp/train_starved.py"
step watch_busy 90 "$CD watch --interval 0.5 --no-status -- $PY /tmp/train_busy.py"
step fleet 300 "$PY -m torch.distributed.run --standalone --nproc-per-node 1 -m cudadoctor fleet --full --max-size 256MiB"
step fleet_json 300 "$PY -m torch.distributed.run --standalone --nproc-per-node 1 -m cudadoctor fleet --json"
step replay 60 "$CD check --from $R/real_gpu_report.json"
fi

# Wall times: the doctor beside the tools people already use, alternating, on the same machine.
if [ "$PART" != steps ]; then
    walls warmup 1 "$CD gpus"
    for _ in 1 2 3 4 5; do
        walls gpus 1 "$CD gpus"
        walls nvidia_smi 1 "nvidia-smi"
        command -v nvitop >/dev/null && walls nvitop_once 1 "nvitop --once"
        $PY -c "import nvitop" 2>/dev/null && walls nvitop_once 1 "$PY -m nvitop --once"
    done
    for _ in 1 2 3; do
        walls check 1 "$CD check"
        walls collect_env 1 "$PY -m torch.utils.collect_env"
    done
    walls check_full 1 "$CD check --full"
fi
cp "$R/walls.tsv" "$R/steps.tsv" "$OUT/" 2>/dev/null
tar -C "$OUT" -czf "$OUT/real-$PART.tgz" real && rm -rf "$R"
