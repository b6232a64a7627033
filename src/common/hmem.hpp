// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Heterogeneous memory (FI_HMEM): which memory a buffer is in, and copies between host
// and CUDA device memory. The CUDA driver is loaded at run time (dlopen of libcuda.so.1):
// the plugins build and run without CUDA, and offer FI_HMEM only where a driver and a
// device answer. Data paths stay host-only; a device buffer is staged through a host
// buffer (`Staging`) at the edge of the provider.
#pragma once

#include <rdma/fi_domain.h>

#include <cstddef>

namespace softnic::hmem {

// Where a buffer lives: host memory (FI_HMEM_SYSTEM), or one CUDA device's.
struct Where {
    fi_hmem_iface iface = FI_HMEM_SYSTEM;
    int device = 0;
    bool host() const { return iface == FI_HMEM_SYSTEM; }
};

// A CUDA driver with at least one device (probed once, on first use).
bool cuda_available();
// Why not, for logs and fi_info's story ("no libcuda.so.1", "cuInit: ...").
const char *cuda_unavailable_reason();

// Device memory of a CUDA device, or host (pageable, pinned or managed memory, which the
// CPU can touch). Needs cuda_available(); otherwise everything is host.
Where locate(const void *p);

// Copies `len` bytes between host and device memory (either side may be either);
// synchronous: the bytes are in place on return. 0 or -FI_EIO (logged).
int copy(void *dst, const void *src, size_t len, int device);

// Makes the application's synchronous copies and memsets on this allocation complete
// before they return (CU_POINTER_ATTRIBUTE_SYNC_MEMOPS), so that bytes it wrote are in
// place when it hands the buffer over, as upstream does for registered device memory.
void sync_memops(const void *dev, int device);

// Device memory another process of this host may map (CUDA IPC): what the exporter
// publishes in its own memory for the importer to read. Untrusted on the importer's side:
// a bad one makes the import fail, and the caller falls back to copying through the host.
struct IpcRef {
    static constexpr uint64_t kMagic = 0x534e49504331ULL;  // "SNIPC1"
    uint64_t magic = 0;
    uint64_t offset = 0;   // of the buffer in its allocation
    uint64_t dev_ptr = 0;  // the buffer in the exporter's address space
    int32_t pid = 0;       // the exporter
    int32_t device = 0;
    uint8_t handle[64] = {};  // CUipcMemHandle of the allocation
};

// Fills `ref` for [dev, dev+len) of `device`: 0, or -FI_E* when the driver cannot export it.
int ipc_export(const void *dev, size_t len, int device, IpcRef &ref);
// Copies `len` bytes of the exported buffer into `dst` (host memory, or device memory of
// `dst_device` when dst_is_device), mapping the allocation once per exporter allocation;
// `same_process`: the exporter is this process (its pointer is ours to use). 0, or
// -FI_E* (logged) when it cannot, and nothing was promised.
int ipc_copy(const IpcRef &ref, bool same_process, void *dst, bool dst_is_device, int dst_device,
             size_t len);

// A device buffer's stand-in in host memory, while an operation is in flight.
class Staging {
  public:
    // Host copy of [dev, dev+len) for a send or write; null with `err` set on failure.
    static Staging *outbound(const void *dev, size_t len, int device, int &err);
    // Empty host buffer whose bytes land in [dev, dev+len) later (a receive or a read).
    static Staging *inbound(void *dev, size_t len, int device, int &err);
    ~Staging();
    Staging(const Staging &) = delete;
    Staging &operator=(const Staging &) = delete;

    void *host() const { return host_; }
    void *device_ptr() const { return dev_; }
    int device() const { return device_; }
    // The first `n` bytes of the host buffer to the device: 0 or -FI_EIO.
    int land(size_t n) const;

  private:
    Staging(void *host, void *dev, size_t len, int device, size_t pinned_class)
        : host_(host), dev_(dev), len_(len), device_(device), pinned_class_(pinned_class) {}
    void *host_;
    void *dev_;
    size_t len_;
    int device_;
    size_t pinned_class_;  // the pinned pool's class of host_; 0: malloc'd
};

}  // namespace softnic::hmem
