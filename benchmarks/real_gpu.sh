#!/usr/bin/env bash
# Run every GPU path of cudadoctor on a machine with an NVIDIA GPU and keep what it says (issue 19).
#
#   OUT=/tmp/real [BUDGET=S] bash benchmarks/real_gpu.sh [steps|new|walls]     (default: all three)
#
# Writes, under $OUT/real/: the machine's own facts (nvidia-smi, /proc/driver/nvidia, libraries), the
# real NVML/libcuda answers (tests/fakenvml/dump_real.py), `pytest -m gpu` with the kept report,
# check / check --full / bench / gpus in every format, triage of this machine's collect_env, ckpt on a
# CUDA-saved checkpoint, watch on a short training run, fleet under torchrun, and wall times of
# `check` and `gpus` beside `nvidia-smi` and `nvitop --once` (when installed). Each step is bounded.
# `new` (issue 30): the extension-kernel check on an nvcc-built single-arch package, OpenMetrics, the
# Python API and the notebook, the MCP tools through the SDK client, fit, `gpus --pick --wait` while
# another process holds memory, triage of this machine's own outputs and of an OOM it provokes, and a
# reference copy loop beside `bench`. Packages the machine lacks (mcp, nbclient, ipykernel, nvitop) are
# taken from $WHEELS (a folder of wheels) when set. BUDGET skips the steps that would start too late.
set -u
OUT=${OUT:?set OUT to a folder}
R=$OUT/real
mkdir -p "$R"
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$(pwd) PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
CD="$PY -m cudadoctor"
START=$(date +%s)
BUDGET=${BUDGET:-100000}  # seconds: a step that would start later than this is skipped (and says so)
step() {  # step NAME SECONDS CMD... : output to $R/NAME.txt, exit code and wall time to steps.tsv
    local name=$1 limit=$2; shift 2
    local t0 t1 rc
    if [ $(($(date +%s) - START)) -gt "$BUDGET" ]; then
        printf '%s\tskipped\tout of budget\n' "$name" | tee -a "$R/steps.tsv"; return
    fi
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

# a checkpoint saved from a DataParallel model on the GPU: what `ckpt` and the MCP tool read
SAVE_CKPT="$PY -c \"import torch; m = torch.nn.Linear(64, 8).cuda(); \
  torch.save({'model': torch.nn.DataParallel(m).state_dict(), 'opt': torch.optim.Adam(m.parameters()).state_dict()}, \
  '/tmp/cuda_ckpt.pt')\""

PART=${1:-all}
if [ "$PART" = all ] || [ "$PART" = steps ]; then
step machine 60 "uname -a; cat /etc/os-release | head -3; nvidia-smi; nvidia-smi -q; \
  cat /proc/driver/nvidia/version; ls -la /dev/nvidia* /proc/driver/nvidia/gpus/*; \
  cat /proc/driver/nvidia/gpus/*/information; ldconfig -p | grep -E 'libcuda|libnvidia-ml|libcudart'; \
  which nvcc && nvcc --version; $PY --version; $PY -m pip list 2>/dev/null | grep -i -E 'nvidia|torch|pynvml|psutil|click|rich'; \
  env | grep -E '^(CUDA|NVIDIA|LD_LIBRARY_PATH|PATH)' "
step nvidia_smi_xml 30 "nvidia-smi -q -x"
step dump_real 60 "$PY tests/fakenvml/dump_real.py"
step pytest_gpu 240 "CUDADOCTOR_SAVE_REPORT=$R/real_gpu_report.json $PY -m pytest -m gpu -q -p no:cacheprovider -rs tests/real_gpu"
step check 120 "$CD check"
step check_json 120 "$CD check --json"
step check_full 200 "$CD check --full"
step gpus 30 "$CD gpus"
step gpus_wide 30 "$CD gpus --wide"
step gpus_json 30 "$CD gpus --json"
step gpus_pick 30 "$CD gpus --pick 1"
step gpus_sort 30 "$CD gpus --sort-by-free"
step check_zh 120 "$CD check --lang zh_CN"
step collect_env 120 "$PY -m torch.utils.collect_env"
step triage 60 "$CD triage $R/collect_env.txt"
step triage_json 60 "$CD triage --json $R/collect_env.txt"
step ckpt_save 120 "$SAVE_CKPT"
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
step fleet 150 "$PY -m torch.distributed.run --standalone --nproc-per-node 1 -m cudadoctor fleet --full --max-size 256MiB"
step fleet_json 120 "$PY -m torch.distributed.run --standalone --nproc-per-node 1 -m cudadoctor fleet --json"
step replay 60 "$CD check --from $R/real_gpu_report.json"
fi


if [ "$PART" = all ] || [ "$PART" = new ]; then
if [ -n "${WHEELS:-}" ]; then
    step wheels 120 "$PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $WHEELS/*.whl"
fi
SITE="PYTHONPATH=$PYTHONPATH:/tmp/site"
# an extension package built for sm_80 only, installed beside torch (dist-info and RECORD, as pip writes)
step ext_build 120 "set -e; rm -rf /tmp/ext && mkdir -p /tmp/ext/onlysm80 /tmp/ext/onlysm80-0.1.dist-info; cd /tmp/ext; \
  printf '__global__ void twice(float *x) { x[threadIdx.x] *= 2.0f; }\nextern \"C\" void run(float *x) { twice<<<1, 32>>>(x); }\n' >k.cu; \
  nvcc -shared -Xcompiler -fPIC -gencode arch=compute_80,code=sm_80 k.cu -o onlysm80/_C.so; \
  printf 'Metadata-Version: 2.1\nName: onlysm80\nVersion: 0.1\nRequires-Dist: torch==2.11.0\n' >onlysm80-0.1.dist-info/METADATA; \
  printf 'onlysm80/_C.so,,\nonlysm80-0.1.dist-info/METADATA,,\nonlysm80-0.1.dist-info/RECORD,,\n' >onlysm80-0.1.dist-info/RECORD; \
  touch onlysm80/__init__.py; ls -la /tmp/ext/onlysm80; cuobjdump --list-elf onlysm80/_C.so"
step ext_check 120 "PYTHONPATH=$PYTHONPATH:/tmp/ext $CD check; echo rc=\$?; PYTHONPATH=$PYTHONPATH:/tmp/ext $CD check --json | $PY -c 'import json,sys; r=json.load(sys.stdin); print(json.dumps(r.get(\"facts\",{}).get(\"extensions\"), indent=1)[:6000]); print([(f[\"code\"], f[\"severity\"], f[\"title\"]) for f in r[\"findings\"]])'"
step ext_explain 30 "PYTHONPATH=$PYTHONPATH:/tmp/ext $CD check --select CD2 --lang zh_CN"
step openmetrics 120 "$CD check --format openmetrics; echo rc=\$?; $CD check --metrics-file /tmp/m.prom >/dev/null; ls -l /tmp/m.prom; \
  $PY -c 'from prometheus_client.parser import text_string_to_metric_families as p; print(len(list(p(open(\"/tmp/m.prom\").read()))), \"families parse\")'"
step api 180 "$PY -c \"
import time, sys, cudadoctor
t = time.perf_counter(); r = cudadoctor.check(); print('check', r.status, r.exit_code, r.codes(), round(time.perf_counter() - t, 1), 's')
print(str(r)[:3000]); print('html chars', len(r._repr_html_()))
print([ (g.index, g.name, g.memory_free) if hasattr(g, 'index') else g for g in cudadoctor.gpus()])
print('pick', cudadoctor.pick(1))
print('torch imported into the caller:', 'torch' in sys.modules)
\""
step notebook 120 "$SITE $PY benchmarks/real/run_notebook.py docs/examples/notebook.ipynb"
step collect_env 120 "$PY -m torch.utils.collect_env"
step nvidia_smi_text 30 "nvidia-smi"
step triage_env 60 "$CD triage $R/collect_env.txt; echo rc=\$?"
step triage_smi 60 "$CD triage $R/nvidia_smi_text.txt; echo rc=\$?"
step oom 60 "$PY benchmarks/real/oom.py"
step triage_oom 60 "$CD triage $R/oom.txt; echo rc=\$?; $CD triage --format markdown $R/oom.txt"
step ckpt_save 120 "$SAVE_CKPT"
step fit_save 120 "$PY -c \"import torch; torch.save({'w%d' % i: torch.zeros(4096, 4096, dtype=torch.bfloat16) for i in range(60)}, '/tmp/fit_1b.pt')\"; ls -l /tmp/fit_1b.pt"
step fit 60 "$CD fit /tmp/fit_1b.pt; echo rc=\$?; $CD fit --training /tmp/fit_1b.pt; echo rc=\$?; $CD fit --json /tmp/fit_1b.pt"
step mcp 150 "$SITE $PY benchmarks/real/mcp_calls.py /tmp/cuda_ckpt.pt"
step pick_wait 120 "$PY benchmarks/real/hold_memory.py 8 4 & sleep 4; date +%s.%N; nvidia-smi --query-gpu=memory.used,memory.free --format=csv; \
  $CD gpus --pick 1 --min-free 60GiB --wait 60; echo rc=\$? at \$(date +%s.%N); wait"
step pick_never 30 "$CD gpus --pick 1 --min-free 100000GiB --wait 60; echo rc=\$?"
step copy_reference 120 "$PY benchmarks/copy_reference.py"
step bench_h2d 150 "$CD bench --json"
step peers_gpus 240 "$SITE $PY benchmarks/paired_times.py --repeats 7 gpus='$PY -m cudadoctor gpus' nvidia-smi=nvidia-smi nvitop='$PY -m nvitop --once'"
step peers_check 300 "$PY benchmarks/paired_times.py --repeats 3 check='$PY -m cudadoctor check' collect_env='$PY -m torch.utils.collect_env'"
fi

# Wall times: the doctor beside the tools people already use, alternating, on the same machine.
if [ "$PART" = all ] || [ "$PART" = walls ]; then
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
