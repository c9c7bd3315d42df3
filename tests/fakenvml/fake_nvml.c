/*
 * A stand-in for libnvidia-ml.so.1 that answers from a machine description file, so the real
 * nvidia-ml-py code path (and any other NVML tool) runs on machines without a GPU.
 *
 * FAKE_NVML_MACHINE=path/to/machine.txt, re-read at every nvmlInit. Lines:
 *   init_error 9                  NVML code nvmlInit returns (0 = success)
 *   init_sleep 30                 seconds nvmlInit sleeps first (a hung driver)
 *   driver 535.104.05 | cuda 12020 | nvml_version 12.535.104.05
 *   crash_in nvmlDeviceGetName    that function segfaults; hang_in nvmlShutdown: it never returns
 *   crash_in nvmlDeviceGetName gpu=2   only for that GPU (a call made with its handle or index)
 *   fail_in nvmlSystemGetDriverVersion 999   that function answers this NVML code (gpu=N: for one GPU)
 *   count_error 999               nvmlDeviceGetCount fails with this NVML code
 *   missing nvmlFoo nvmlBar_v2    functions that answer FUNCTION_NOT_FOUND, as an old driver's
 *                                 absent symbols do (nvidia-ml-py raises the same exception)
 *   device name="NVIDIA H100" uuid=GPU-… bus=00000000:1B:00.0 cc=9.0 total=… used=… util=3
 *          temp=40 gen=5/5 width=16/16 mig=0 error=0 unsupported=temp,util
 *   process gpu=0 pid=123 mem=1048576 kind=compute     (mem=na: not available, as under WDDM)
 *   mig gpu=0 uuid=MIG-… total=… used=…
 *   device … rx=KBps tx=KBps power=mW clocks_event=0x44   PCIe throughput (KB/s, as NVML), power draw,
 *                                 clock event (throttle) reasons bitmask
 *   process gpu=0 pid=child …     pid=child: the first child of the process that loaded this library
 *                                 (the command `cudadoctor watch` runs); not listed while it has none
 *   timeline gpu=0 t=1.5 util=95 used=… rx=… tx=… power=… clocks_event=0x…  from t seconds after
 *                                 nvmlInit on, these device values apply (each key only if given)
 *   timeline gpu=0 t=2 pid=child mem=…  from t on, that process's GPU memory on that GPU
 *   device … ecc=2/9 retired=SBE/DBE retired_pending=1 remapped=CORR/UNC remap_pending=1 remap_failure=1
 *          persistence=0 compute_mode=3 health_error=4   health queries (see health_parse at the end)
 * libcuda stand-in (fake_cuda.c) reads: cuda_init 0 | cuda_init_sleep 30 | cuda_devices 2
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <dirent.h>

#define MAXDEV 128
#define MAXPROC 8192
#define MAXMIG 7
#define MAGIC_DEV 0x6465760aU
#define MAGIC_MIG 0x6d69670aU

typedef struct {
    unsigned magic;
    int index;
    char name[96], uuid[96], bus[32], unsupported[128];
    int cc_major, cc_minor;
    unsigned long long total, used;
    unsigned util, temp, gen_cur, gen_max, width_cur, width_max, mig;
    int error;
    int nmig;
    struct mig_t {
        unsigned magic;
        char uuid[96];
        unsigned long long total, used;
    } migs[MAXMIG];
    unsigned long long rx, tx, clocks_event; /* KB/s, KB/s, bitmask */
    unsigned power;
    int has_power;
    /* health: ECC, retired pages, remapped rows, persistence and compute mode (health_parse) */
    unsigned ecc_vol, ecc_agg, retired_sbe, retired_dbe, retired_pending;
    unsigned remap_corr, remap_unc, remap_pending, remap_failure;
    int persistence, compute_mode, health_error;
} dev_t_;

static void health_parse(dev_t_ *d, const char *line);

typedef struct {
    int gpu;
    unsigned pid;
    unsigned long long mem;
    int graphics;
    int child; /* pid=child */
} proc_t_;

static struct {
    int init_error, init_sleep;
    char driver[80], nvml_version[80], missing[2048];
    struct rule_t {                    /* crash_in / hang_in / fail_in: a broken driver's calls */
        char fn[128];
        int kind, gpu, code;           /* kind: RULE_*; gpu -1: every call of fn */
    } rule[32];
    int nrule;
    int count_error;                   /* NVML code nvmlDeviceGetCount returns */
    int cuda;
    int ndev, nproc;
    dev_t_ dev[MAXDEV];
    proc_t_ proc[MAXPROC];
} M;

static void tl_reset(void);
static void tl_parse(const char *line);
static void tl_apply(dev_t_ *d);
static unsigned tl_child_pid(void);
static unsigned long long hexnum(const char *line, const char *key, unsigned long long dflt);

static const char *field(const char *line, const char *key, char *out, size_t n) {
    size_t klen = strlen(key);
    const char *p = line;
    while ((p = strstr(p, key)) != NULL) {
        if ((p == line || p[-1] == ' ' || p[-1] == '\t') && p[klen] == '=') {
            const char *v = p + klen + 1;
            size_t i = 0;
            if (*v == '"') {
                v++;
                while (*v && *v != '"' && i + 1 < n) out[i++] = *v++;
            } else {
                while (*v && *v != ' ' && *v != '\t' && *v != '\n' && i + 1 < n) out[i++] = *v++;
            }
            out[i] = 0;
            return out;
        }
        p += klen;
    }
    return NULL;
}

static unsigned long long num(const char *line, const char *key, unsigned long long dflt) {
    char buf[64];
    if (!field(line, key, buf, sizeof buf)) return dflt;
    if (strcmp(buf, "na") == 0) return ~0ULL;
    return strtoull(buf, NULL, 10);
}

static void pair(const char *line, const char *key, unsigned *a, unsigned *b, unsigned dflt) {
    char buf[32];
    *a = *b = dflt;
    if (field(line, key, buf, sizeof buf)) sscanf(buf, "%u/%u", a, b);
}

enum { RULE_CRASH, RULE_HANG, RULE_FAIL };

static void rule_parse(int kind, const char *rest, const char *line) {
    if (M.nrule >= 32) return;
    struct rule_t *r = &M.rule[M.nrule];
    int code = 0;
    if (sscanf(rest, "%127s %d", r->fn, &code) < 1) return;
    r->kind = kind;
    r->code = kind == RULE_FAIL ? code : 0;
    r->gpu = (int)num(line, "gpu", ~0ULL);
    M.nrule++;
}

static int load(void) {
    memset(&M, 0, sizeof M);
    tl_reset();
    strcpy(M.driver, "535.104.05");
    strcpy(M.nvml_version, "12.535.104.05");
    M.cuda = 12020;
    const char *path = getenv("FAKE_NVML_MACHINE");
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f) return 0;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        char word[32] = {0};
        if (sscanf(line, "%31s", word) != 1 || word[0] == '#') continue;
        const char *rest = line + strlen(word);
        while (*rest == ' ') rest++;
        if (!strcmp(word, "init_error")) M.init_error = atoi(rest);
        else if (!strcmp(word, "init_sleep")) M.init_sleep = atoi(rest);
        else if (!strcmp(word, "driver")) sscanf(rest, "%79s", M.driver);
        else if (!strcmp(word, "nvml_version")) sscanf(rest, "%79s", M.nvml_version);
        else if (!strcmp(word, "cuda")) M.cuda = atoi(rest);
        else if (!strcmp(word, "crash_in")) rule_parse(RULE_CRASH, rest, line);
        else if (!strcmp(word, "hang_in")) rule_parse(RULE_HANG, rest, line);
        else if (!strcmp(word, "fail_in")) rule_parse(RULE_FAIL, rest, line);
        else if (!strcmp(word, "count_error")) M.count_error = atoi(rest);
        else if (!strcmp(word, "missing")) {
            strncat(M.missing, " ", sizeof M.missing - strlen(M.missing) - 1);
            strncat(M.missing, rest, sizeof M.missing - strlen(M.missing) - 1);
        } else if (!strcmp(word, "device") && M.ndev < MAXDEV) {
            dev_t_ *d = &M.dev[M.ndev];
            d->magic = MAGIC_DEV;
            d->index = M.ndev++;
            char cc[16] = "8.0";
            if (!field(line, "name", d->name, sizeof d->name)) strcpy(d->name, "NVIDIA A100-SXM4-80GB");
            if (!field(line, "uuid", d->uuid, sizeof d->uuid))
                snprintf(d->uuid, sizeof d->uuid, "GPU-00000000-0000-0000-0000-%012d", d->index);
            if (!field(line, "bus", d->bus, sizeof d->bus))
                snprintf(d->bus, sizeof d->bus, "00000000:%02X:00.0", 0x10 + d->index);
            field(line, "unsupported", d->unsupported, sizeof d->unsupported);
            field(line, "cc", cc, sizeof cc);
            sscanf(cc, "%d.%d", &d->cc_major, &d->cc_minor);
            d->total = num(line, "total", 85899345920ULL);
            d->used = num(line, "used", 0);
            d->util = (unsigned)num(line, "util", 0);
            d->temp = (unsigned)num(line, "temp", 35);
            pair(line, "gen", &d->gen_cur, &d->gen_max, 4);
            pair(line, "width", &d->width_cur, &d->width_max, 16);
            d->mig = (unsigned)num(line, "mig", 0);
            d->error = (int)num(line, "error", 0);
            health_parse(d, line);
            d->rx = num(line, "rx", 0);
            d->tx = num(line, "tx", 0);
            d->has_power = field(line, "power", cc, sizeof cc) != NULL;
            d->power = (unsigned)num(line, "power", 0);
            d->clocks_event = hexnum(line, "clocks_event", 0);
        } else if (!strcmp(word, "process") && M.nproc < MAXPROC) {
            proc_t_ *p = &M.proc[M.nproc++];
            char kind[16] = "compute";
            p->gpu = (int)num(line, "gpu", 0);
            p->pid = (unsigned)num(line, "pid", 1);
            p->mem = num(line, "mem", 0);
            field(line, "kind", kind, sizeof kind);
            p->graphics = strcmp(kind, "graphics") == 0;
            p->child = field(line, "pid", kind, sizeof kind) && strcmp(kind, "child") == 0;
        } else if (!strcmp(word, "timeline")) {
            tl_parse(line);
        } else if (!strcmp(word, "mig")) {
            int g = (int)num(line, "gpu", 0);
            if (g < M.ndev && M.dev[g].nmig < MAXMIG) {
                struct mig_t *m = &M.dev[g].migs[M.dev[g].nmig++];
                m->magic = MAGIC_MIG;
                field(line, "uuid", m->uuid, sizeof m->uuid);
                m->total = num(line, "total", 10ULL << 30);
                m->used = num(line, "used", 0);
            }
        }
    }
    fclose(f);
    return 0;
}

static int initialised = 0;

static int is_missing(const char *fn) {
    char pat[128];
    snprintf(pat, sizeof pat, " %s", fn);
    const char *p = M.missing;
    size_t n = strlen(pat);
    while ((p = strstr(p, pat)) != NULL) {
        char c = p[n];
        if (c == 0 || c == ' ' || c == '\n' || c == '\t') return 1;
        p += n;
    }
    return 0;
}

/* the rules for fn: gpu -1 for the call as such (every GPU), else for that GPU's call; an NVML code or 0 */
static int misbehave(const char *fn, int gpu) {
    for (int i = 0; i < M.nrule; i++) {
        struct rule_t *r = &M.rule[i];
        if (r->gpu != gpu || strcmp(r->fn, fn)) continue;
        if (r->kind == RULE_CRASH) raise(SIGSEGV);
        if (r->kind == RULE_HANG) sleep(3600);
        if (r->kind == RULE_FAIL) return r->code;
    }
    return 0;
}

#define ENTER(fn)                                \
    do {                                         \
        if (!initialised) return 1;              \
        int rule_rc_ = misbehave(fn, -1);        \
        if (rule_rc_) return rule_rc_;           \
        if (is_missing(fn)) return 13;           \
    } while (0)

#define ENTER_GPU(fn, index)                     \
    do {                                         \
        int gpu_rc_ = misbehave(fn, index);      \
        if (gpu_rc_) return gpu_rc_;             \
    } while (0)

static dev_t_ *DEV(void *h) {
    dev_t_ *d = (dev_t_ *)h;
    return (d && d->magic == MAGIC_DEV) ? d : NULL;
}

#define DEVICE(fn, key)                                             \
    ENTER(fn);                                                      \
    dev_t_ *d = DEV(h);                                             \
    if (!d) return 2;                                               \
    ENTER_GPU(fn, d->index);                                        \
    if (d->error) return d->error;                                  \
    if (key[0] && strstr(d->unsupported, key)) return 3;          \
    tl_apply(d);

int nvmlInitWithFlags(unsigned flags) {
    (void)flags;
    load();
    int rc = misbehave("nvmlInit", -1);
    if (rc) return rc;
    if (M.init_sleep) sleep((unsigned)M.init_sleep);
    if (M.init_error) return M.init_error;
    initialised = 1;
    return 0;
}
int nvmlInit_v2(void) { return nvmlInitWithFlags(0); }
int nvmlInit(void) { return nvmlInitWithFlags(0); }
int nvmlShutdown(void) { misbehave("nvmlShutdown", -1); initialised = 0; return 0; }

const char *nvmlErrorString(int r) {
    switch (r) {
    case 0: return "Success";
    case 9: return "Driver Not Loaded";
    case 18: return "Driver/library version mismatch";
    default: return "Fake NVML error";
    }
}

static int copy(char *dst, unsigned n, const char *src) {
    if (strlen(src) + 1 > n) return 7;
    strcpy(dst, src);
    return 0;
}

int nvmlSystemGetDriverVersion(char *v, unsigned n) { ENTER("nvmlSystemGetDriverVersion"); return copy(v, n, M.driver); }
int nvmlSystemGetNVMLVersion(char *v, unsigned n) { ENTER("nvmlSystemGetNVMLVersion"); return copy(v, n, M.nvml_version); }
int nvmlSystemGetCudaDriverVersion(int *v) { ENTER("nvmlSystemGetCudaDriverVersion"); *v = M.cuda; return 0; }
int nvmlSystemGetCudaDriverVersion_v2(int *v) { ENTER("nvmlSystemGetCudaDriverVersion_v2"); *v = M.cuda; return 0; }
int nvmlDeviceGetCount_v2(unsigned *n) { ENTER("nvmlDeviceGetCount_v2"); if (M.count_error) return M.count_error; *n = (unsigned)M.ndev; return 0; }
int nvmlDeviceGetCount(unsigned *n) { ENTER("nvmlDeviceGetCount"); if (M.count_error) return M.count_error; *n = (unsigned)M.ndev; return 0; }

int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **h) {
    ENTER("nvmlDeviceGetHandleByIndex_v2");
    if (i >= (unsigned)M.ndev) return 2;
    ENTER_GPU("nvmlDeviceGetHandleByIndex_v2", (int)i);
    if (M.dev[i].error) return M.dev[i].error;
    *h = &M.dev[i];
    return 0;
}
int nvmlDeviceGetHandleByIndex(unsigned i, void **h) { return nvmlDeviceGetHandleByIndex_v2(i, h); }

int nvmlDeviceGetIndex(void *h, unsigned *i) { DEVICE("nvmlDeviceGetIndex", ""); *i = (unsigned)d->index; return 0; }
int nvmlDeviceGetName(void *h, char *v, unsigned n) { DEVICE("nvmlDeviceGetName", ""); return copy(v, n, d->name); }

int nvmlDeviceGetUUID(void *h, char *v, unsigned n) {
    ENTER("nvmlDeviceGetUUID");
    struct mig_t *m = (struct mig_t *)h;
    if (m && m->magic == MAGIC_MIG) return copy(v, n, m->uuid);
    dev_t_ *d = DEV(h);
    if (!d) return 2;
    ENTER_GPU("nvmlDeviceGetUUID", d->index);
    if (d->error) return d->error;
    return copy(v, n, d->uuid);
}

typedef struct {
    char busIdLegacy[16];
    unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} pci_t;

int nvmlDeviceGetPciInfo_v3(void *h, pci_t *p) {
    DEVICE("nvmlDeviceGetPciInfo_v3", "");
    memset(p, 0, sizeof *p);
    strncpy(p->busId, d->bus, sizeof p->busId - 1);
    strncpy(p->busIdLegacy, d->bus + (strlen(d->bus) > 12 ? 4 : 0), sizeof p->busIdLegacy - 1);
    sscanf(d->bus, "%x:%x:%x", &p->domain, &p->bus, &p->device);
    p->pciDeviceId = 0x233010de;
    return 0;
}
int nvmlDeviceGetPciInfo_v2(void *h, pci_t *p) { return nvmlDeviceGetPciInfo_v3(h, p); }

int nvmlDeviceGetCudaComputeCapability(void *h, int *ma, int *mi) {
    DEVICE("nvmlDeviceGetCudaComputeCapability", "");
    *ma = d->cc_major;
    *mi = d->cc_minor;
    return 0;
}

typedef struct { unsigned long long total, free, used; } mem_t;
typedef struct { unsigned version; unsigned long long total, reserved, free, used; } mem2_t;

int nvmlDeviceGetMemoryInfo(void *h, mem_t *m) {
    ENTER("nvmlDeviceGetMemoryInfo");
    struct mig_t *g = (struct mig_t *)h;
    if (g && g->magic == MAGIC_MIG) {
        m->total = g->total; m->used = g->used; m->free = g->total - g->used;
        return 0;
    }
    dev_t_ *d = DEV(h);
    if (!d) return 2;
    ENTER_GPU("nvmlDeviceGetMemoryInfo", d->index);
    if (d->error) return d->error;
    tl_apply(d);
    m->total = d->total; m->used = d->used; m->free = d->total - d->used;
    return 0;
}
int nvmlDeviceGetMemoryInfo_v2(void *h, mem2_t *m) {
    DEVICE("nvmlDeviceGetMemoryInfo_v2", "");
    m->total = d->total; m->reserved = 0; m->used = d->used; m->free = d->total - d->used;
    return 0;
}

typedef struct { unsigned gpu, memory; } util_t;
int nvmlDeviceGetUtilizationRates(void *h, util_t *u) {
    DEVICE("nvmlDeviceGetUtilizationRates", "util");
    u->gpu = d->util;
    u->memory = d->util / 2;
    return 0;
}
int nvmlDeviceGetTemperature(void *h, int sensor, unsigned *t) {
    (void)sensor;
    DEVICE("nvmlDeviceGetTemperature", "temp");
    *t = d->temp;
    return 0;
}
int nvmlDeviceGetCurrPcieLinkGeneration(void *h, unsigned *v) { DEVICE("nvmlDeviceGetCurrPcieLinkGeneration", "pcie"); *v = d->gen_cur; return 0; }
int nvmlDeviceGetMaxPcieLinkGeneration(void *h, unsigned *v) { DEVICE("nvmlDeviceGetMaxPcieLinkGeneration", "pcie"); *v = d->gen_max; return 0; }
int nvmlDeviceGetGpuMaxPcieLinkGeneration(void *h, unsigned *v) { DEVICE("nvmlDeviceGetGpuMaxPcieLinkGeneration", "pcie"); *v = d->gen_max; return 0; }
int nvmlDeviceGetCurrPcieLinkWidth(void *h, unsigned *v) { DEVICE("nvmlDeviceGetCurrPcieLinkWidth", "pcie"); *v = d->width_cur; return 0; }
int nvmlDeviceGetMaxPcieLinkWidth(void *h, unsigned *v) { DEVICE("nvmlDeviceGetMaxPcieLinkWidth", "pcie"); *v = d->width_max; return 0; }

int nvmlDeviceGetMigMode(void *h, unsigned *cur, unsigned *pend) {
    DEVICE("nvmlDeviceGetMigMode", "mig");
    if (d->mig > 1) return 3; /* mig=2 in the file: a GPU without MIG support */
    *cur = *pend = d->mig;
    return 0;
}
/* As a real H100 with MIG disabled answers (tests/fixtures/real_h100_nvml.json): no MIG slots, NOT_FOUND */
int nvmlDeviceGetMaxMigDeviceCount(void *h, unsigned *n) {
    DEVICE("nvmlDeviceGetMaxMigDeviceCount", "mig");
    *n = d->mig ? MAXMIG : 0;
    return 0;
}
int nvmlDeviceGetMigDeviceHandleByIndex(void *h, unsigned i, void **out) {
    DEVICE("nvmlDeviceGetMigDeviceHandleByIndex", "mig");
    if (!d->mig) return 6;
    if (i >= (unsigned)d->nmig) return 6; /* NOT_FOUND: an empty slot */
    *out = &d->migs[i];
    return 0;
}

typedef struct { unsigned pid; unsigned long long usedGpuMemory; unsigned gpuInstanceId, computeInstanceId; } pinfo_t;

static int procs(void *h, unsigned *count, pinfo_t *out, int graphics) {
    dev_t_ *d = DEV(h);
    if (!d) return 2;
    if (d->error) return d->error;
    tl_apply(d);
    /* only a `pid=child` line needs the child's pid: a real driver scans no /proc, nor should this */
    unsigned n = 0, child = 0;
    for (int i = 0; i < M.nproc; i++)
        if (M.proc[i].gpu == d->index && M.proc[i].graphics == graphics && M.proc[i].child) {
            child = tl_child_pid();
            break;
        }
    for (int i = 0; i < M.nproc; i++)
        if (M.proc[i].gpu == d->index && M.proc[i].graphics == graphics && (!M.proc[i].child || child)) n++;
    if (out == NULL || *count < n) {
        unsigned room = *count;
        *count = n;
        return (n == 0 && room == 0) ? 0 : 7;
    }
    unsigned k = 0;
    for (int i = 0; i < M.nproc; i++) {
        if (M.proc[i].gpu != d->index || M.proc[i].graphics != graphics) continue;
        if (M.proc[i].child && !child) continue;
        out[k].pid = M.proc[i].child ? child : M.proc[i].pid;
        out[k].usedGpuMemory = M.proc[i].mem;
        out[k].gpuInstanceId = out[k].computeInstanceId = 0xFFFFFFFFu;
        k++;
    }
    *count = n;
    return 0;
}
int nvmlDeviceGetComputeRunningProcesses_v3(void *h, unsigned *c, pinfo_t *o) { ENTER("nvmlDeviceGetComputeRunningProcesses_v3"); return procs(h, c, o, 0); }
int nvmlDeviceGetComputeRunningProcesses_v2(void *h, unsigned *c, pinfo_t *o) { ENTER("nvmlDeviceGetComputeRunningProcesses_v2"); return procs(h, c, o, 0); }
int nvmlDeviceGetGraphicsRunningProcesses_v3(void *h, unsigned *c, pinfo_t *o) { ENTER("nvmlDeviceGetGraphicsRunningProcesses_v3"); return procs(h, c, o, 1); }
int nvmlDeviceGetGraphicsRunningProcesses_v2(void *h, unsigned *c, pinfo_t *o) { ENTER("nvmlDeviceGetGraphicsRunningProcesses_v2"); return procs(h, c, o, 1); }

/* Queries other NVML tools (nvitop, gpustat) make, answered with plausible constants so that a
 * benchmark on the fake machine measures them doing their normal work, not their error paths. */
int nvmlDeviceGetComputeMode(void *h, int *m) {
    DEVICE("nvmlDeviceGetComputeMode", "compute_mode");
    if (d->health_error) return d->health_error;
    *m = d->compute_mode;
    return 0;
}
int nvmlDeviceGetEncoderUtilization(void *h, unsigned *u, unsigned *p) { DEVICE("nvmlDeviceGetEncoderUtilization", ""); *u = 0; *p = 167000; return 0; }
int nvmlDeviceGetDecoderUtilization(void *h, unsigned *u, unsigned *p) { DEVICE("nvmlDeviceGetDecoderUtilization", ""); *u = 0; *p = 167000; return 0; }
int nvmlDeviceGetDisplayActive(void *h, int *a) { DEVICE("nvmlDeviceGetDisplayActive", ""); *a = 0; return 0; }
int nvmlDeviceGetDriverModel(void *h, int *c, int *p) { (void)c; (void)p; DEVICE("nvmlDeviceGetDriverModel", ""); return 3; }
int nvmlDeviceGetFanSpeed(void *h, unsigned *s) { DEVICE("nvmlDeviceGetFanSpeed", "fan"); *s = 30; return 0; }
int nvmlDeviceGetPerformanceState(void *h, int *p) { DEVICE("nvmlDeviceGetPerformanceState", ""); *p = 0; return 0; }
int nvmlDeviceGetPersistenceMode(void *h, int *m) {
    DEVICE("nvmlDeviceGetPersistenceMode", "persistence");
    if (d->health_error) return d->health_error;
    *m = d->persistence;
    return 0;
}
int nvmlDeviceGetPowerManagementLimit(void *h, unsigned *mw) { DEVICE("nvmlDeviceGetPowerManagementLimit", "power"); *mw = 700000; return 0; }
int nvmlDeviceGetEnforcedPowerLimit(void *h, unsigned *mw) { DEVICE("nvmlDeviceGetEnforcedPowerLimit", "power"); *mw = 700000; return 0; }
int nvmlDeviceGetPowerUsage(void *h, unsigned *mw) { DEVICE("nvmlDeviceGetPowerUsage", "power"); *mw = d->has_power ? d->power : 100000 + 5000 * d->util; return 0; }
int nvmlDeviceGetProcessUtilization(void *h, void *s, unsigned *n, unsigned long long t) { (void)s; (void)n; (void)t; DEVICE("nvmlDeviceGetProcessUtilization", ""); return 6; }
int nvmlDeviceGetTotalEccErrors(void *h, int e, int c, unsigned long long *n) {
    DEVICE("nvmlDeviceGetTotalEccErrors", "ecc");
    if (d->health_error) return d->health_error;
    /* e: 0 corrected, 1 uncorrected; c: 0 volatile, 1 aggregate */
    *n = e == 1 ? (c == 1 ? d->ecc_agg : d->ecc_vol) : 0;
    return 0;
}

/* ---- scripted timeline (cudadoctor watch): values that change with the time since nvmlInit ---- */
#define MAXTL 512
static struct tl_t {
    double t;
    int gpu, child;
    unsigned pid;
    int has_util, has_used, has_rx, has_tx, has_power, has_clocks, has_mem;
    unsigned util, power;
    unsigned long long used, rx, tx, clocks_event, mem;
} TL[MAXTL];
static int ntl;
static double tl_t0;

static double tl_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void tl_reset(void) {
    ntl = 0;
    tl_t0 = tl_now();
}

static unsigned long long hexnum(const char *line, const char *key, unsigned long long dflt) {
    char buf[64];
    if (!field(line, key, buf, sizeof buf)) return dflt;
    return strtoull(buf, NULL, 0);
}

static void tl_parse(const char *line) {
    char buf[64];
    if (ntl >= MAXTL) return;
    struct tl_t *e = &TL[ntl++];
    memset(e, 0, sizeof *e);
    e->gpu = (int)num(line, "gpu", 0);
    e->t = field(line, "t", buf, sizeof buf) ? strtod(buf, NULL) : 0.0;
    if (field(line, "pid", buf, sizeof buf)) {
        e->child = strcmp(buf, "child") == 0;
        e->pid = e->child ? 0 : (unsigned)strtoul(buf, NULL, 10);
    }
    if ((e->has_util = field(line, "util", buf, sizeof buf) != NULL)) e->util = (unsigned)num(line, "util", 0);
    if ((e->has_used = field(line, "used", buf, sizeof buf) != NULL)) e->used = num(line, "used", 0);
    if ((e->has_rx = field(line, "rx", buf, sizeof buf) != NULL)) e->rx = num(line, "rx", 0);
    if ((e->has_tx = field(line, "tx", buf, sizeof buf) != NULL)) e->tx = num(line, "tx", 0);
    if ((e->has_power = field(line, "power", buf, sizeof buf) != NULL)) e->power = (unsigned)num(line, "power", 0);
    if ((e->has_clocks = field(line, "clocks_event", buf, sizeof buf) != NULL))
        e->clocks_event = hexnum(line, "clocks_event", 0);
    if ((e->has_mem = field(line, "mem", buf, sizeof buf) != NULL)) e->mem = num(line, "mem", 0);
}

/* every point whose time has come, in file order: the latest given value of each key wins */
static void tl_apply(dev_t_ *d) {
    double elapsed = tl_now() - tl_t0;
    for (int i = 0; i < ntl; i++) {
        struct tl_t *e = &TL[i];
        if (e->gpu != d->index || e->t > elapsed) continue;
        if (e->child || e->pid) {
            for (int j = 0; j < M.nproc; j++)
                if (M.proc[j].gpu == d->index && e->has_mem &&
                    (e->child ? M.proc[j].child : (!M.proc[j].child && M.proc[j].pid == e->pid)))
                    M.proc[j].mem = e->mem;
            continue;
        }
        if (e->has_util) d->util = e->util;
        if (e->has_used) d->used = e->used;
        if (e->has_rx) d->rx = e->rx;
        if (e->has_tx) d->tx = e->tx;
        if (e->has_power) { d->power = e->power; d->has_power = 1; }
        if (e->has_clocks) d->clocks_event = e->clocks_event;
    }
}

static unsigned tl_ppid(const char *pid) {
    char path[300], buf[512];
    snprintf(path, sizeof path, "/proc/%s/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *close = strrchr(buf, ')');
    unsigned ppid = 0;
    if (!close || sscanf(close + 1, " %*c %u", &ppid) != 1) return 0;
    return ppid;
}

/* the first child of this process (by /proc/PID/stat's ppid), 0 when it has none; the last one found
 * is checked first, so a sampler asking every interval does not scan /proc each time */
static unsigned tl_child_pid(void) {
    static unsigned cached;
    unsigned me = (unsigned)getpid(), found = 0;
    char name[32];
    if (cached) {
        snprintf(name, sizeof name, "%u", cached);
        if (tl_ppid(name) == me) return cached;
        cached = 0;
    }
    DIR *dir = opendir("/proc");
    if (!dir) return 0;
    struct dirent *ent;
    while ((ent = readdir(dir)) != NULL) {
        if (ent->d_name[0] < '1' || ent->d_name[0] > '9') continue;
        if (tl_ppid(ent->d_name) == me) {
            unsigned pid = (unsigned)strtoul(ent->d_name, NULL, 10);
            if (!found || pid < found) found = pid;
        }
    }
    closedir(dir);
    cached = found;
    return found;
}

int nvmlDeviceGetPcieThroughput(void *h, int counter, unsigned *v) {
    DEVICE("nvmlDeviceGetPcieThroughput", "throughput");
    if (counter == 0) *v = (unsigned)d->tx;
    else if (counter == 1) *v = (unsigned)d->rx;
    else return 2;
    return 0;
}
int nvmlDeviceGetCurrentClocksEventReasons(void *h, unsigned long long *r) {
    DEVICE("nvmlDeviceGetCurrentClocksEventReasons", "clocks");
    *r = d->clocks_event;
    return 0;
}
int nvmlDeviceGetCurrentClocksThrottleReasons(void *h, unsigned long long *r) {
    DEVICE("nvmlDeviceGetCurrentClocksThrottleReasons", "clocks");
    *r = d->clocks_event;
    return 0;
}

/* Health keys on a device line: ecc=VOLATILE/AGGREGATE (uncorrected counts), retired=SBE/DBE (pages),
 * retired_pending=1, remapped=CORRECTABLE/UNCORRECTABLE (rows), remap_pending=1, remap_failure=1,
 * persistence=0|1 (default 1), compute_mode=0..3 (0 default, 2 prohibited, 3 exclusive process),
 * health_error=N (every health query answers NVML code N); unsupported=ecc,retired,remap,persistence,
 * compute_mode makes that query answer NOT_SUPPORTED. */
static void health_parse(dev_t_ *d, const char *line) {
    pair(line, "ecc", &d->ecc_vol, &d->ecc_agg, 0);
    pair(line, "retired", &d->retired_sbe, &d->retired_dbe, 0);
    d->retired_pending = (unsigned)num(line, "retired_pending", 0);
    pair(line, "remapped", &d->remap_corr, &d->remap_unc, 0);
    d->remap_pending = (unsigned)num(line, "remap_pending", 0);
    d->remap_failure = (unsigned)num(line, "remap_failure", 0);
    d->persistence = (int)num(line, "persistence", 1);
    d->compute_mode = (int)num(line, "compute_mode", 0);
    d->health_error = (int)num(line, "health_error", 0);
}

static int retired_pages(void *h, int cause, unsigned *count, unsigned long long *addr, unsigned long long *ts) {
    dev_t_ *d = DEV(h);
    if (!d) return 2;
    if (d->error) return d->error;
    if (strstr(d->unsupported, "retired")) return 3;
    if (d->health_error) return d->health_error;
    unsigned n = cause == 1 ? d->retired_dbe : d->retired_sbe;
    if (addr == NULL || *count < n) {
        unsigned room = *count;
        *count = n;
        return (n == 0 && room == 0) ? 0 : 7;
    }
    for (unsigned i = 0; i < n; i++) {
        addr[i] = 0x1000ULL * (i + 1) + (unsigned long long)cause;
        if (ts) ts[i] = 1700000000ULL + i;
    }
    *count = n;
    return 0;
}
int nvmlDeviceGetRetiredPages(void *h, int cause, unsigned *count, unsigned long long *addr) {
    ENTER("nvmlDeviceGetRetiredPages");
    return retired_pages(h, cause, count, addr, NULL);
}
int nvmlDeviceGetRetiredPages_v2(void *h, int cause, unsigned *count, unsigned long long *addr, unsigned long long *ts) {
    ENTER("nvmlDeviceGetRetiredPages_v2");
    return retired_pages(h, cause, count, addr, ts);
}
int nvmlDeviceGetRetiredPagesPendingStatus(void *h, int *pending) {
    DEVICE("nvmlDeviceGetRetiredPagesPendingStatus", "retired");
    if (d->health_error) return d->health_error;
    *pending = (int)d->retired_pending;
    return 0;
}
int nvmlDeviceGetRemappedRows(void *h, unsigned *corr, unsigned *unc, unsigned *pending, unsigned *failure) {
    DEVICE("nvmlDeviceGetRemappedRows", "remap");
    if (d->health_error) return d->health_error;
    *corr = d->remap_corr;
    *unc = d->remap_unc;
    *pending = d->remap_pending;
    *failure = d->remap_failure;
    return 0;
}
