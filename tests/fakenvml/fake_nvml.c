/*
 * A stand-in for libnvidia-ml.so.1 that answers from a machine description file, so the real
 * nvidia-ml-py code path (and any other NVML tool) runs on machines without a GPU.
 *
 * FAKE_NVML_MACHINE=path/to/machine.txt, re-read at every nvmlInit. Lines:
 *   init_error 9                  NVML code nvmlInit returns (0 = success)
 *   init_sleep 30                 seconds nvmlInit sleeps first (a hung driver)
 *   driver 535.104.05 | cuda 12020 | nvml_version 12.535.104.05
 *   missing nvmlFoo nvmlBar_v2    functions that answer FUNCTION_NOT_FOUND, as an old driver's
 *                                 absent symbols do (nvidia-ml-py raises the same exception)
 *   device name="NVIDIA H100" uuid=GPU-… bus=00000000:1B:00.0 cc=9.0 total=… used=… util=3
 *          temp=40 gen=5/5 width=16/16 mig=0 error=0 unsupported=temp,util
 *   process gpu=0 pid=123 mem=1048576 kind=compute     (mem=na: not available, as under WDDM)
 *   mig gpu=0 uuid=MIG-… total=… used=…
 * libcuda stand-in (fake_cuda.c) reads: cuda_init 0 | cuda_init_sleep 30 | cuda_devices 2
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAXDEV 16
#define MAXPROC 64
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
} dev_t_;

typedef struct {
    int gpu;
    unsigned pid;
    unsigned long long mem;
    int graphics;
} proc_t_;

static struct {
    int init_error, init_sleep;
    char driver[80], nvml_version[80], missing[2048];
    int cuda;
    int ndev, nproc;
    dev_t_ dev[MAXDEV];
    proc_t_ proc[MAXPROC];
} M;

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

static int load(void) {
    memset(&M, 0, sizeof M);
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
        } else if (!strcmp(word, "process") && M.nproc < MAXPROC) {
            proc_t_ *p = &M.proc[M.nproc++];
            char kind[16] = "compute";
            p->gpu = (int)num(line, "gpu", 0);
            p->pid = (unsigned)num(line, "pid", 1);
            p->mem = num(line, "mem", 0);
            field(line, "kind", kind, sizeof kind);
            p->graphics = strcmp(kind, "graphics") == 0;
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

#define ENTER(fn)                          \
    do {                                   \
        if (!initialised) return 1;        \
        if (is_missing(fn)) return 13;     \
    } while (0)

static dev_t_ *DEV(void *h) {
    dev_t_ *d = (dev_t_ *)h;
    return (d && d->magic == MAGIC_DEV) ? d : NULL;
}

#define DEVICE(fn, key)                                             \
    ENTER(fn);                                                      \
    dev_t_ *d = DEV(h);                                             \
    if (!d) return 2;                                               \
    if (d->error) return d->error;                                  \
    if (key[0] && strstr(d->unsupported, key)) return 3;

int nvmlInitWithFlags(unsigned flags) {
    (void)flags;
    load();
    if (M.init_sleep) sleep((unsigned)M.init_sleep);
    if (M.init_error) return M.init_error;
    initialised = 1;
    return 0;
}
int nvmlInit_v2(void) { return nvmlInitWithFlags(0); }
int nvmlInit(void) { return nvmlInitWithFlags(0); }
int nvmlShutdown(void) { initialised = 0; return 0; }

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
int nvmlDeviceGetCount_v2(unsigned *n) { ENTER("nvmlDeviceGetCount_v2"); *n = (unsigned)M.ndev; return 0; }
int nvmlDeviceGetCount(unsigned *n) { ENTER("nvmlDeviceGetCount"); *n = (unsigned)M.ndev; return 0; }

int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **h) {
    ENTER("nvmlDeviceGetHandleByIndex_v2");
    if (i >= (unsigned)M.ndev) return 2;
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
    if (d->error) return d->error;
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
int nvmlDeviceGetMaxMigDeviceCount(void *h, unsigned *n) { DEVICE("nvmlDeviceGetMaxMigDeviceCount", "mig"); *n = MAXMIG; return 0; }
int nvmlDeviceGetMigDeviceHandleByIndex(void *h, unsigned i, void **out) {
    DEVICE("nvmlDeviceGetMigDeviceHandleByIndex", "mig");
    if (!d->mig) return 29;
    if (i >= (unsigned)d->nmig) return 6; /* NOT_FOUND: an empty slot */
    *out = &d->migs[i];
    return 0;
}

typedef struct { unsigned pid; unsigned long long usedGpuMemory; unsigned gpuInstanceId, computeInstanceId; } pinfo_t;

static int procs(void *h, unsigned *count, pinfo_t *out, int graphics) {
    dev_t_ *d = DEV(h);
    if (!d) return 2;
    if (d->error) return d->error;
    unsigned n = 0;
    for (int i = 0; i < M.nproc; i++)
        if (M.proc[i].gpu == d->index && M.proc[i].graphics == graphics) n++;
    if (out == NULL || *count < n) {
        unsigned room = *count;
        *count = n;
        return (n == 0 && room == 0) ? 0 : 7;
    }
    unsigned k = 0;
    for (int i = 0; i < M.nproc; i++) {
        if (M.proc[i].gpu != d->index || M.proc[i].graphics != graphics) continue;
        out[k].pid = M.proc[i].pid;
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
int nvmlDeviceGetComputeMode(void *h, int *m) { DEVICE("nvmlDeviceGetComputeMode", ""); *m = 0; return 0; }
int nvmlDeviceGetEncoderUtilization(void *h, unsigned *u, unsigned *p) { DEVICE("nvmlDeviceGetEncoderUtilization", ""); *u = 0; *p = 167000; return 0; }
int nvmlDeviceGetDecoderUtilization(void *h, unsigned *u, unsigned *p) { DEVICE("nvmlDeviceGetDecoderUtilization", ""); *u = 0; *p = 167000; return 0; }
int nvmlDeviceGetDisplayActive(void *h, int *a) { DEVICE("nvmlDeviceGetDisplayActive", ""); *a = 0; return 0; }
int nvmlDeviceGetDriverModel(void *h, int *c, int *p) { (void)c; (void)p; DEVICE("nvmlDeviceGetDriverModel", ""); return 3; }
int nvmlDeviceGetFanSpeed(void *h, unsigned *s) { DEVICE("nvmlDeviceGetFanSpeed", "fan"); *s = 30; return 0; }
int nvmlDeviceGetPerformanceState(void *h, int *p) { DEVICE("nvmlDeviceGetPerformanceState", ""); *p = 0; return 0; }
int nvmlDeviceGetPersistenceMode(void *h, int *m) { DEVICE("nvmlDeviceGetPersistenceMode", ""); *m = 1; return 0; }
int nvmlDeviceGetPowerManagementLimit(void *h, unsigned *mw) { DEVICE("nvmlDeviceGetPowerManagementLimit", "power"); *mw = 700000; return 0; }
int nvmlDeviceGetEnforcedPowerLimit(void *h, unsigned *mw) { DEVICE("nvmlDeviceGetEnforcedPowerLimit", "power"); *mw = 700000; return 0; }
int nvmlDeviceGetPowerUsage(void *h, unsigned *mw) { DEVICE("nvmlDeviceGetPowerUsage", "power"); *mw = 100000 + 5000 * d->util; return 0; }
int nvmlDeviceGetProcessUtilization(void *h, void *s, unsigned *n, unsigned long long t) { (void)s; (void)n; (void)t; DEVICE("nvmlDeviceGetProcessUtilization", ""); return 6; }
int nvmlDeviceGetTotalEccErrors(void *h, int e, int c, unsigned long long *n) { (void)e; (void)c; DEVICE("nvmlDeviceGetTotalEccErrors", ""); *n = 0; return 0; }
