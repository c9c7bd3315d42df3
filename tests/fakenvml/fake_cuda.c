/* A stand-in for libcuda.so.1 (see fake_nvml.c for the machine file): cuInit's result and hangs.
 * As the real driver does (tests/fixtures/real_h100_nvml.json, driver 580): cuDriverGetVersion works before
 * cuInit, cuDeviceGetCount answers CUDA_ERROR_NOT_INITIALIZED (3) until cuInit succeeded, and
 * cuGetErrorName answers CUDA_ERROR_INVALID_VALUE (1) with no name for a code it does not know. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int init_result = 0, init_sleep = 0, devices = -1, version = 0, initialised = 0;

static void load(void) {
    const char *path = getenv("FAKE_NVML_MACHINE");
    FILE *f = path ? fopen(path, "r") : NULL;
    int ndev = 0;
    if (!f) return;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "cuda_init_sleep ", 16)) init_sleep = atoi(line + 16);
        else if (!strncmp(line, "cuda_init ", 10)) init_result = atoi(line + 10);
        else if (!strncmp(line, "cuda_devices ", 13)) devices = atoi(line + 13);
        else if (!strncmp(line, "cuda ", 5)) version = atoi(line + 5);
        else if (!strncmp(line, "device", 6)) ndev++;
    }
    if (devices < 0) devices = ndev;
    fclose(f);
}

int cuDriverGetVersion(int *v) { load(); *v = version ? version : 12020; return 0; }
int cuInit(unsigned flags) {
    (void)flags;
    load();
    if (init_sleep) sleep((unsigned)init_sleep);
    initialised = init_result == 0;
    return init_result;
}
int cuDeviceGetCount(int *n) {
    if (!initialised) return 3; /* CUDA_ERROR_NOT_INITIALIZED, *n untouched */
    *n = devices < 0 ? 0 : devices;
    return 0;
}
int cuGetErrorName(int r, const char **s) {
    switch (r) {
    case 0: *s = "CUDA_SUCCESS"; return 0;
    case 1: *s = "CUDA_ERROR_INVALID_VALUE"; return 0;
    case 3: *s = "CUDA_ERROR_NOT_INITIALIZED"; return 0;
    case 101: *s = "CUDA_ERROR_INVALID_DEVICE"; return 0;
    case 804: *s = "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"; return 0;
    case 34: *s = "CUDA_ERROR_STUB_LIBRARY"; return 0;
    case 100: *s = "CUDA_ERROR_NO_DEVICE"; return 0;
    case 46: *s = "CUDA_ERROR_DEVICE_UNAVAILABLE"; return 0;
    case 304: *s = "CUDA_ERROR_OPERATING_SYSTEM"; return 0;
    case 802: *s = "CUDA_ERROR_SYSTEM_NOT_READY"; return 0;
    case 803: *s = "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"; return 0;
    case 999: *s = "CUDA_ERROR_UNKNOWN"; return 0;
    default: *s = NULL; return 1;
    }
}
