// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// libcxi.so as a job launcher uses it (Slurm's switch/hpe_slingshot): written in C,
// the library opened by its development name with dlopen and every call looked up with
// dlsym, a service made per job step from the header's types and names, what the calls
// return freed with plain free(). Needs root (service changes are root's): it makes a
// private registry (SOFTNIC_CXI_SERVICES); skipped (exit 77) otherwise.
#include <dlfcn.h>
#include <libcxi/libcxi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int failures;
#define CHECK(cond, ...)                                               \
    do {                                                               \
        if (!(cond)) {                                                 \
            fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                              \
            fputc('\n', stderr);                                       \
            failures++;                                                \
        }                                                              \
    } while (0)

static struct {
    int (*get_device_list)(struct cxil_device_list **);
    void (*free_device_list)(struct cxil_device_list *);
    int (*open_device)(uint32_t, struct cxil_dev **);
    int (*get_svc_list)(struct cxil_dev *, struct cxil_svc_list **);
    int (*alloc_svc)(struct cxil_dev *, const struct cxi_svc_desc *, struct cxi_svc_fail_info *);
    int (*destroy_svc)(struct cxil_dev *, unsigned int);
    int (*set_svc_lpr)(struct cxil_dev *, unsigned int, unsigned int);
    int (*get_svc_rsrc_use)(struct cxil_dev *, unsigned int, struct cxi_rsrc_use *);
} cxi;

static void *lookup(void *lib, const char *name) {
    void *f = dlsym(lib, name);
    CHECK(f != NULL, "libcxi has no %s", name);
    return f;
}
// dlsym's object pointer into a function pointer, as launchers do it (C allows no cast).
#define LOOKUP(field, name) memcpy(&cxi.field, &(void *){lookup(lib, name)}, sizeof(cxi.field))

// The descriptor a launcher makes for one step: one user, the step's VNIs, two traffic
// classes, and limits on every resource (TLEs reserved whole, as the driver requires).
static struct cxi_svc_desc step_desc(uid_t uid, uint16_t vni) {
    struct cxi_svc_desc d;
    memset(&d, 0, sizeof(d));
    d.restricted_members = 1;
    d.members[0].type = CXI_SVC_MEMBER_UID;
    d.members[0].svc_member.uid = uid;
    d.members[1].type = CXI_SVC_MEMBER_IGNORE;
    d.restricted_vnis = 1;
    d.num_vld_vnis = 1;
    d.vnis[0] = vni;
    d.restricted_tcs = 1;
    d.tcs[CXI_TC_LOW_LATENCY] = true;
    d.tcs[CXI_TC_BEST_EFFORT] = true;
    d.resource_limits = 1;
    for (int t = 0; t < CXI_RSRC_TYPE_MAX; t++) {
        d.limits.type[t].max = 64;
        d.limits.type[t].res = t == CXI_RSRC_TYPE_TLE ? 64 : 2;
    }
    return d;
}

static int run(const char *path);

static void one_step(struct cxil_dev *dev) {
    struct cxi_svc_desc d = step_desc(1234, 1500);
    struct cxi_svc_fail_info fail;
    memset(&fail, 0, sizeof(fail));
    int id = cxi.alloc_svc(dev, &d, &fail);
    CHECK(id > CXI_DEFAULT_SVC_ID, "alloc_svc: %s", strerror(-id));
    if (id <= 0) return;
    // A second step on the same VNI overlaps: refused, as the driver does.
    struct cxi_svc_desc again = step_desc(1235, 1500);
    int rc = cxi.alloc_svc(dev, &again, &fail);
    CHECK(rc == -EEXIST, "overlapping VNI: %d", rc);
    // Asking more than the device has: -ENOSPC, and what was left is reported.
    struct cxi_svc_desc big = step_desc(1236, 1501);
    big.limits.type[CXI_RSRC_TYPE_PTE].max = 2048;  // the whole device, less step 1's
    big.limits.type[CXI_RSRC_TYPE_PTE].res = 2048;
    memset(&fail, 0, sizeof(fail));
    rc = cxi.alloc_svc(dev, &big, &fail);
    CHECK(rc == -ENOSPC, "over-reserved PTEs: %d", rc);
    CHECK(fail.rsrc_avail[CXI_RSRC_TYPE_PTE] < 2048, "%s left: %u",
          cxi_rsrc_type_strs[CXI_RSRC_TYPE_PTE], fail.rsrc_avail[CXI_RSRC_TYPE_PTE]);

    struct cxil_svc_list *list = NULL;
    rc = cxi.get_svc_list(dev, &list);
    CHECK(rc == 0 && list, "get_svc_list: %d", rc);
    int seen = 0;
    for (unsigned i = 0; list && i < list->count; i++) {
        const struct cxi_svc_desc *s = &list->descs[i];
        if (s->svc_id != (unsigned)id) continue;
        seen = 1;
        CHECK(s->members[0].svc_member.uid == 1234 && s->vnis[0] == 1500 && s->enable,
              "service %d read back: uid %u vni %u enable %u", id,
              (unsigned)s->members[0].svc_member.uid, s->vnis[0], s->enable);
    }
    CHECK(seen, "service %d is not listed", id);
    free(list);

    struct cxi_rsrc_use use;
    memset(&use, 0xff, sizeof(use));
    rc = cxi.get_svc_rsrc_use(dev, (unsigned)id, &use);
    CHECK(rc == 0 && use.svc_id == (unsigned)id, "get_svc_rsrc_use: %d", rc);
    for (int t = 0; rc == 0 && t < CXI_RSRC_TYPE_MAX; t++)
        CHECK(use.in_use[t] == 0, "%s in use: %u", cxi_rsrc_type_strs[t], use.in_use[t]);
    CHECK(cxi.set_svc_lpr(dev, (unsigned)id, 2) == 0, "set_svc_lpr");

    CHECK(cxi.destroy_svc(dev, (unsigned)id) == 0, "destroy_svc");
    CHECK(cxi.destroy_svc(dev, (unsigned)id) == -EINVAL, "destroyed twice");
    CHECK(cxi.destroy_svc(dev, CXI_DEFAULT_SVC_ID) == -EINVAL, "the default service");
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s PATH/libcxi.so\n", argv[0]);
        return 2;
    }
    if (geteuid() != 0) {
        printf("skipped: service changes need root\n");
        return 77;
    }
    char dir[] = "/tmp/softnic-launcher-XXXXXX";
    if (!mkdtemp(dir) || chmod(dir, 0755) != 0) {
        perror("registry directory");
        return 1;
    }
    setenv("SOFTNIC_CXI_SERVICES", dir, 1);
    int rc = run(argv[1]);
    char cmd[sizeof(dir) + 16];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return rc;
}

static int run(const char *path) {
    void *lib = dlopen(path, RTLD_LAZY | RTLD_GLOBAL);
    if (!lib) {
        fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
        return 1;
    }
    LOOKUP(get_device_list, "cxil_get_device_list");
    LOOKUP(free_device_list, "cxil_free_device_list");
    LOOKUP(open_device, "cxil_open_device");
    LOOKUP(get_svc_list, "cxil_get_svc_list");
    LOOKUP(alloc_svc, "cxil_alloc_svc");
    LOOKUP(destroy_svc, "cxil_destroy_svc");
    LOOKUP(set_svc_lpr, "cxil_set_svc_lpr");
    LOOKUP(get_svc_rsrc_use, "cxil_get_svc_rsrc_use");
    if (failures) return 1;

    struct cxil_device_list *devs = NULL;
    int rc = cxi.get_device_list(&devs);
    CHECK(rc == 0 && devs && devs->count >= 1, "get_device_list: %d", rc);
    if (rc || !devs || !devs->count) return 1;
    CHECK(strcmp(devs->info[0].device_name, "cxi0") == 0, "first device: %s",
          devs->info[0].device_name);
    struct cxil_dev *dev = NULL;
    rc = cxi.open_device(devs->info[0].dev_id, &dev);
    CHECK(rc == 0 && dev, "open_device: %d", rc);
    cxi.free_device_list(devs);
    if (rc || !dev) return 1;
    CHECK(strcmp(dev->info.device_name, "cxi0") == 0 && dev->info.num_ptes >= 2048 &&
              dev->info.num_tles >= 2048 && dev->info.num_acs >= 1022,
          "devinfo of %s: %u PTEs %u TLEs %u ACs", dev->info.device_name, dev->info.num_ptes,
          dev->info.num_tles, dev->info.num_acs);
    one_step(dev);
    free(dev);  // launchers free the device with free(): it must come from malloc
    printf("%s\n", failures ? "FAILED" : "ok: a launcher's service calls over softnic's libcxi");
    return failures ? 1 : 0;
}
