// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The CUDA driver API, loaded at run time. The few prototypes and constants below are
// the driver's (cuda.h), written out so that nothing of CUDA is needed to build.
#include "common/hmem.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "common/log.hpp"

namespace softnic::hmem {
namespace {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUstream = struct CUstream_st *;

constexpr CUresult kCudaSuccess = 0;
constexpr int kPtrAttrMemoryType = 2;       // CU_POINTER_ATTRIBUTE_MEMORY_TYPE
constexpr int kPtrAttrIsManaged = 8;        // CU_POINTER_ATTRIBUTE_IS_MANAGED
constexpr int kPtrAttrDeviceOrdinal = 9;    // CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
constexpr unsigned kMemoryTypeDevice = 2;   // CU_MEMORYTYPE_DEVICE
constexpr int kPtrAttrSyncMemops = 6;       // CU_POINTER_ATTRIBUTE_SYNC_MEMOPS
constexpr unsigned kIpcLazyPeerAccess = 1;  // CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS
constexpr size_t kMaxImports = 64;          // mappings of other processes' allocations kept
constexpr unsigned kHostAllocPortable = 1;  // CU_MEMHOSTALLOC_PORTABLE: pinned for every context
constexpr size_t kPinnedMin = 4096;         // smallest staging buffer class
constexpr size_t kPinnedCache = 256 << 20;  // pinned staging bytes kept for reuse

struct CUipcMemHandle {
    char reserved[64];
};
using HandleBytes = std::array<uint8_t, 64>;

// Another process's allocation, mapped here.
struct Import {
    CUdeviceptr base;
    size_t size;
};

// One device: its primary context (the one the CUDA runtime uses, so the application's
// allocations are valid in it), retained on first use. Copies run on the context's
// legacy default stream: ordered after the application's work on it and on every
// blocking stream (a device buffer handed over is one whose writes were issued before),
// as cudaMemcpy is.
struct Device {
    std::mutex mu;
    std::once_flag once;
    CUcontext ctx = nullptr;  // set once, under `once`
    bool ready = false;
    std::map<HandleBytes, Import> imports;  // under mu
    std::deque<HandleBytes> import_order;   // oldest first, closed beyond kMaxImports
};

struct Cuda {
    void *lib = nullptr;
    std::string why;
    CUresult (*init)(unsigned);
    CUresult (*device_get_count)(int *);
    CUresult (*device_get)(CUdevice *, int);
    CUresult (*primary_ctx_retain)(CUcontext *, CUdevice);
    CUresult (*ctx_push)(CUcontext);
    CUresult (*ctx_pop)(CUcontext *);
    CUresult (*pointer_get_attribute)(void *, int, CUdeviceptr);
    CUresult (*pointer_set_attribute)(const void *, int, CUdeviceptr);
    CUresult (*stream_synchronize)(CUstream);
    CUresult (*memcpy_async)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
    CUresult (*get_error_string)(CUresult, const char **);
    // CUDA IPC (absent: device-to-device across processes falls back to the host).
    CUresult (*address_range)(CUdeviceptr *, size_t *, CUdeviceptr) = nullptr;
    CUresult (*ipc_get)(CUipcMemHandle *, CUdeviceptr) = nullptr;
    CUresult (*ipc_open)(CUdeviceptr *, CUipcMemHandle, unsigned) = nullptr;
    CUresult (*ipc_close)(CUdeviceptr) = nullptr;
    // Pinned host memory for staging (absent: pageable memory).
    CUresult (*host_alloc)(void **, size_t, unsigned) = nullptr;
    CUresult (*free_host)(void *) = nullptr;
    std::vector<std::unique_ptr<Device>> devices;

    const char *error(CUresult r) const {
        const char *s = nullptr;
        if (get_error_string) get_error_string(r, &s);
        return s ? s : "unknown CUDA error";
    }
    template <class F>
    bool sym(F &f, const char *name) {
        f = reinterpret_cast<F>(dlsym(lib, name));
        if (!f) why = std::string("libcuda.so.1 lacks ") + name;
        return f != nullptr;
    }
    bool load();
    Device *open(int ordinal);
};

bool Cuda::load() {
    if (const char *off = std::getenv("FI_HMEM_CUDA_ENABLE"); off && *off == '0') {
        why = "FI_HMEM_CUDA_ENABLE=0";
        return false;
    }
    lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        why = "no libcuda.so.1";
        return false;
    }
    bool ok = sym(init, "cuInit") && sym(device_get_count, "cuDeviceGetCount") &&
              sym(device_get, "cuDeviceGet") &&
              sym(primary_ctx_retain, "cuDevicePrimaryCtxRetain") &&
              sym(ctx_push, "cuCtxPushCurrent_v2") && sym(ctx_pop, "cuCtxPopCurrent_v2") &&
              sym(pointer_get_attribute, "cuPointerGetAttribute") &&
              sym(pointer_set_attribute, "cuPointerSetAttribute") &&
              sym(stream_synchronize, "cuStreamSynchronize") &&
              sym(memcpy_async, "cuMemcpyAsync") && sym(get_error_string, "cuGetErrorString");
    if (!ok) return false;
    address_range =
        reinterpret_cast<decltype(address_range)>(dlsym(lib, "cuMemGetAddressRange_v2"));
    ipc_get = reinterpret_cast<decltype(ipc_get)>(dlsym(lib, "cuIpcGetMemHandle"));
    ipc_open = reinterpret_cast<decltype(ipc_open)>(dlsym(lib, "cuIpcOpenMemHandle_v2"));
    ipc_close = reinterpret_cast<decltype(ipc_close)>(dlsym(lib, "cuIpcCloseMemHandle"));
    host_alloc = reinterpret_cast<decltype(host_alloc)>(dlsym(lib, "cuMemHostAlloc"));
    free_host = reinterpret_cast<decltype(free_host)>(dlsym(lib, "cuMemFreeHost"));
    if (CUresult r = init(0); r != kCudaSuccess) {
        why = std::string("cuInit: ") + error(r);
        return false;
    }
    int n = 0;
    if (CUresult r = device_get_count(&n); r != kCudaSuccess || n <= 0) {
        why = r != kCudaSuccess ? std::string("cuDeviceGetCount: ") + error(r) : "no CUDA device";
        return false;
    }
    for (int i = 0; i < n; i++)
        devices.push_back(std::make_unique<Device>());
    return true;
}

// The device, its context retained on first use; null (logged once) when the driver
// refuses it.
Device *Cuda::open(int ordinal) {
    if (ordinal < 0 || size_t(ordinal) >= devices.size()) return nullptr;
    Device &d = *devices[size_t(ordinal)];
    std::call_once(d.once, [&] {  // the application's threads and ours may race here
        CUdevice dev = 0;
        CUresult r = device_get(&dev, ordinal);
        if (r == kCudaSuccess) r = primary_ctx_retain(&d.ctx, dev);
        if (r != kCudaSuccess) SN_WARN(FI_LOG_CORE, "CUDA device %d: %s\n", ordinal, error(r));
        d.ready = r == kCudaSuccess;
    });
    return d.ready ? &d : nullptr;
}

// Pushes a device's context for the scope (and holds its lock: one copy at a time).
class InContext {
  public:
    InContext(Cuda *c, Device *d) : c_(c), g_(d->mu) { ok_ = c->ctx_push(d->ctx) == kCudaSuccess; }
    ~InContext() {
        CUcontext popped = nullptr;
        if (ok_) c_->ctx_pop(&popped);
    }
    bool ok() const { return ok_; }

  private:
    Cuda *c_;
    std::lock_guard<std::mutex> g_;
    bool ok_;
};

// One copy on the current context's legacy default stream, finished on return (the
// caller holds the context, InContext). 0 or -FI_EIO, logged.
int copy_now(Cuda *c, CUdeviceptr dst, CUdeviceptr src, size_t len) {
    CUresult r = c->memcpy_async(dst, src, len, nullptr);
    if (r == kCudaSuccess) r = c->stream_synchronize(nullptr);
    if (r != kCudaSuccess)
        SN_REJECT(-FI_EIO, FI_LOG_CORE, "copy of %zu bytes 0x%llx -> 0x%llx: %s\n", len, src, dst,
                  c->error(r));
    return 0;
}

Cuda *cuda() {
    static Cuda *c = [] {
        auto *api = new Cuda();  // lives as long as the process: the driver does too
        if (!api->load()) {
            SN_INFO(FI_LOG_CORE, "FI_HMEM_CUDA unavailable: %s\n", api->why.c_str());
            api->devices.clear();
        }
        return api;
    }();
    return c;
}

CUdeviceptr dptr(const void *p) {
    return reinterpret_cast<CUdeviceptr>(p);
}

}  // namespace

bool cuda_available() {
    return !cuda()->devices.empty();
}

const char *cuda_unavailable_reason() {
    return cuda_available() ? "" : cuda()->why.c_str();
}

Where locate(const void *p) {
    Where w;
    Cuda *c = cuda();
    if (c->devices.empty() || !p) return w;
    Device *d0 = c->open(0);  // the query needs a current context, any will do
    if (!d0 || c->ctx_push(d0->ctx) != kCudaSuccess) return w;
    unsigned type = 0, managed = 0;
    int ordinal = 0;
    bool device =
        c->pointer_get_attribute(&type, kPtrAttrMemoryType, dptr(p)) == kCudaSuccess &&
        type == kMemoryTypeDevice &&
        c->pointer_get_attribute(&managed, kPtrAttrIsManaged, dptr(p)) == kCudaSuccess &&
        !managed &&
        c->pointer_get_attribute(&ordinal, kPtrAttrDeviceOrdinal, dptr(p)) == kCudaSuccess;
    CUcontext popped = nullptr;
    c->ctx_pop(&popped);
    if (device) {
        w.iface = FI_HMEM_CUDA;
        w.device = ordinal;
    }
    return w;
}

int copy(void *dst, const void *src, size_t len, int device) {
    if (!len) return 0;
    Cuda *c = cuda();
    Device *d = c->open(device);
    if (!d) SN_REJECT(-FI_EIO, FI_LOG_CORE, "no usable CUDA device %d\n", device);
    InContext in(c, d);
    if (!in.ok()) SN_REJECT(-FI_EIO, FI_LOG_CORE, "no context on CUDA device %d\n", device);
    return copy_now(c, dptr(dst), dptr(src), len);
}

void sync_memops(const void *dev, int device) {
    Cuda *c = cuda();
    Device *d = c->open(device);
    if (!d) return;
    InContext in(c, d);
    unsigned one = 1;
    CUresult r = in.ok() ? c->pointer_set_attribute(&one, kPtrAttrSyncMemops, dptr(dev)) : 1;
    if (r != kCudaSuccess)
        SN_INFO(FI_LOG_MR, "CU_POINTER_ATTRIBUTE_SYNC_MEMOPS on %p: %s\n", dev, c->error(r));
}

namespace {

// Staging buffers the driver pinned: copies to and from them run at the bus's speed,
// where pageable memory goes through the driver's own bounce buffer first. Pinning costs
// more than a copy, so freed buffers are kept by power-of-two class for the next one.
class PinnedPool {
  public:
    static size_t class_of(size_t len) { return std::bit_ceil(std::max(len, kPinnedMin)); }
    void *take(size_t cls, int device) {
        {
            std::lock_guard<std::mutex> g(mu_);
            auto &list = free_[cls];
            if (!list.empty()) {
                void *p = list.back();
                list.pop_back();
                cached_ -= cls;
                return p;
            }
        }
        Cuda *c = cuda();
        Device *d = c->host_alloc && c->free_host ? c->open(device) : nullptr;
        if (!d) return nullptr;
        InContext in(c, d);
        void *p = nullptr;
        if (!in.ok() || c->host_alloc(&p, cls, kHostAllocPortable) != kCudaSuccess) return nullptr;
        return p;
    }
    void give(void *p, size_t cls, int device) {
        {
            std::lock_guard<std::mutex> g(mu_);
            if (cached_ + cls <= kPinnedCache) {
                free_[cls].push_back(p);
                cached_ += cls;
                return;
            }
        }
        Cuda *c = cuda();
        if (Device *d = c->open(device)) {
            InContext in(c, d);
            c->free_host(p);
        }
    }

  private:
    std::mutex mu_;
    std::map<size_t, std::vector<void *>> free_;
    size_t cached_ = 0;
};

PinnedPool &pinned() {
    static auto *pool = new PinnedPool();  // as long as the process: buffers may outlive exit
    return *pool;
}

}  // namespace

Staging *Staging::outbound(const void *dev, size_t len, int device, int &err) {
    Staging *s = inbound(const_cast<void *>(dev), len, device, err);
    if (s && (err = copy(s->host_, dev, len, device))) {
        delete s;
        return nullptr;
    }
    return s;
}

Staging *Staging::inbound(void *dev, size_t len, int device, int &err) {
    err = 0;
    size_t cls = PinnedPool::class_of(len);
    void *host = pinned().take(cls, device);
    if (!host) {  // no pinned memory to be had: pageable, slower but as correct
        cls = 0;
        host = std::malloc(len ? len : 1);
    }
    auto *s = host ? new (std::nothrow) Staging(host, dev, len, device, cls) : nullptr;
    if (!s) {
        if (cls)
            pinned().give(host, cls, device);
        else
            std::free(host);
        err = -FI_ENOMEM;
        SN_WARN(FI_LOG_CORE, "no memory to stage %zu bytes of device %d\n", len, device);
    }
    return s;
}

Staging::~Staging() {
    if (pinned_class_)
        pinned().give(host_, pinned_class_, device_);
    else
        std::free(host_);
}

int Staging::land(size_t n) const {
    return copy(dev_, host_, n < len_ ? n : len_, device_);
}

namespace {

bool ipc_usable(Cuda *c) {
    return c->address_range && c->ipc_get && c->ipc_open && c->ipc_close;
}

// The exporter's allocation mapped in `d`'s context (opened once, kept up to kMaxImports).
const Import *import(Cuda *c, Device *d, const IpcRef &ref) {
    HandleBytes key;
    std::memcpy(key.data(), ref.handle, key.size());
    if (auto it = d->imports.find(key); it != d->imports.end()) return &it->second;
    CUipcMemHandle h;
    std::memcpy(h.reserved, ref.handle, sizeof(h.reserved));
    Import m{};
    CUresult r = c->ipc_open(&m.base, h, kIpcLazyPeerAccess);
    if (r != kCudaSuccess) {
        SN_WARN(FI_LOG_CORE, "cuIpcOpenMemHandle (process %d): %s\n", ref.pid, c->error(r));
        return nullptr;
    }
    CUdeviceptr base = 0;
    if (c->address_range(&base, &m.size, m.base) != kCudaSuccess || base != m.base) {
        c->ipc_close(m.base);
        return nullptr;
    }
    if (d->import_order.size() >= kMaxImports) {
        HandleBytes old = d->import_order.front();
        d->import_order.pop_front();
        c->ipc_close(d->imports[old].base);
        d->imports.erase(old);
    }
    d->import_order.push_back(key);
    return &(d->imports[key] = m);
}

}  // namespace

int ipc_export(const void *dev, size_t len, int device, IpcRef &ref) {
    Cuda *c = cuda();
    Device *d = c->open(device);
    if (!d || !ipc_usable(c)) return -FI_ENOSYS;
    InContext in(c, d);
    if (!in.ok()) return -FI_EIO;
    CUdeviceptr base = 0;
    size_t size = 0;
    CUipcMemHandle h;
    CUresult r = c->address_range(&base, &size, dptr(dev));
    if (r == kCudaSuccess) r = c->ipc_get(&h, base);
    if (r != kCudaSuccess || dptr(dev) - base + len > size) {
        SN_INFO(FI_LOG_CORE, "device buffer %p not exportable: %s\n", dev, c->error(r));
        return -FI_ENOSYS;
    }
    ref.magic = IpcRef::kMagic;
    ref.offset = dptr(dev) - base;
    ref.dev_ptr = dptr(dev);
    ref.pid = int32_t(getpid());
    ref.device = device;
    std::memcpy(ref.handle, h.reserved, sizeof(ref.handle));
    return 0;
}

int ipc_copy(const IpcRef &ref, bool same_process, void *dst, bool dst_is_device, int dst_device,
             size_t len) {
    Cuda *c = cuda();
    Device *d = c->open(dst_is_device ? dst_device : 0);
    if (ref.magic != IpcRef::kMagic || !d || !ipc_usable(c)) return -FI_ENOSYS;
    InContext in(c, d);
    if (!in.ok()) return -FI_EIO;
    CUdeviceptr src = 0;
    if (same_process) {  // our own allocation: bounds from the driver, not the peer
        CUdeviceptr base = 0;
        size_t size = 0;
        if (c->address_range(&base, &size, ref.dev_ptr) != kCudaSuccess ||
            ref.dev_ptr - base + len > size)
            SN_REJECT(-FI_EINVAL, FI_LOG_CORE, "device range of %zu bytes out of bounds\n", len);
        src = ref.dev_ptr;
    } else {
        const Import *m = import(c, d, ref);
        if (!m) return -FI_EIO;
        if (ref.offset > m->size || len > m->size - ref.offset)
            SN_REJECT(-FI_EINVAL, FI_LOG_CORE, "imported range of %zu bytes out of bounds\n", len);
        src = m->base + ref.offset;
    }
    return copy_now(c, dptr(dst), src, len);
}

}  // namespace softnic::hmem
