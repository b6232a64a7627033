// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Device memory for the FI_HMEM tests, as an application gets it: the CUDA driver loaded
// at run time (no CUDA at build time), device 0's primary context current in the calling
// thread. Where there is no driver or no device, `cuda::why_not()` says why and the
// tests skip.
#pragma once

#include <dlfcn.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cuda {

using Result = int;
using DevPtr = unsigned long long;

struct Api {
    void *lib = nullptr;
    std::string why;
    Result (*init)(unsigned) = nullptr;
    Result (*device_get_count)(int *) = nullptr;
    Result (*primary_ctx_retain)(void **, int) = nullptr;
    Result (*ctx_set_current)(void *) = nullptr;
    Result (*mem_alloc)(DevPtr *, size_t) = nullptr;
    Result (*mem_free)(DevPtr) = nullptr;
    Result (*htod)(DevPtr, const void *, size_t) = nullptr;
    Result (*dtoh)(void *, DevPtr, size_t) = nullptr;
    Result (*memset8)(DevPtr, unsigned char, size_t) = nullptr;
    Result (*ctx_synchronize)() = nullptr;
    void *ctx = nullptr;

    template <class F>
    bool sym(F &f, const char *name) {
        f = reinterpret_cast<F>(dlsym(lib, name));
        if (!f) why = std::string("libcuda.so.1 lacks ") + name;
        return f != nullptr;
    }
    bool load() {
        lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!lib) return why = "no CUDA driver (libcuda.so.1)", false;
        if (!(sym(init, "cuInit") && sym(device_get_count, "cuDeviceGetCount") &&
              sym(primary_ctx_retain, "cuDevicePrimaryCtxRetain") &&
              sym(ctx_set_current, "cuCtxSetCurrent") && sym(mem_alloc, "cuMemAlloc_v2") &&
              sym(mem_free, "cuMemFree_v2") && sym(htod, "cuMemcpyHtoD_v2") &&
              sym(dtoh, "cuMemcpyDtoH_v2") && sym(memset8, "cuMemsetD8_v2") &&
              sym(ctx_synchronize, "cuCtxSynchronize")))
            return false;
        int n = 0;
        if (init(0) != 0 || device_get_count(&n) != 0 || n < 1)
            return why = "the CUDA driver finds no device", false;
        if (primary_ctx_retain(&ctx, 0) != 0) return why = "no context on device 0", false;
        return true;
    }
};

inline Api &api() {
    static Api a;
    static bool ok = a.load();
    (void)ok;
    return a;
}

// Empty when device memory can be had; otherwise why not.
inline std::string why_not() {
    Api &a = api();
    if (!a.why.empty()) return a.why;
    if (a.ctx_set_current(a.ctx) != 0) return "cuCtxSetCurrent failed";
    return {};
}

// `len` bytes of device 0's memory, freed on destruction.
class Buffer {
  public:
    explicit Buffer(size_t len) : len_(len) {
        Api &a = api();
        a.ctx_set_current(a.ctx);
        if (a.mem_alloc(&ptr_, len ? len : 1) != 0) ptr_ = 0;
    }
    ~Buffer() {
        if (ptr_) api().mem_free(ptr_);
    }
    Buffer(const Buffer &) = delete;
    Buffer &operator=(const Buffer &) = delete;

    bool ok() const { return ptr_ != 0; }
    void *get() const { return reinterpret_cast<void *>(ptr_); }
    size_t size() const { return len_; }
    // Writes finish before these return (a pageable copy or a memset may otherwise
    // still be in flight), as an application synchronizes before handing a buffer over.
    bool put(const std::vector<uint8_t> &host) const {
        return host.size() <= len_ && api().htod(ptr_, host.data(), host.size()) == 0 &&
               api().ctx_synchronize() == 0;
    }
    std::vector<uint8_t> take(size_t n) const {
        std::vector<uint8_t> host(n);
        if (n > len_ || api().dtoh(host.data(), ptr_, n) != 0) host.clear();
        return host;
    }
    bool fill(uint8_t v) const {
        return api().memset8(ptr_, v, len_) == 0 && api().ctx_synchronize() == 0;
    }

  private:
    DevPtr ptr_ = 0;
    size_t len_;
};

}  // namespace cuda
