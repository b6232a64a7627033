// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Bytes the emulated NIC moves into an application's registered memory on a remote
// peer's behalf (RMA writes, atomics). On the hardware that is DMA, outside the
// application's C++ memory model: an application may poll memory that a remote write is
// filling (OpenSHMEM's wait_until, a flag at the end of a put), and the completion it
// relies on is the counter or CQ entry, not the bytes. ThreadSanitizer is told so for the
// copy itself (a scope, not a suppression): every other access stays checked.
#pragma once

#if defined(__SANITIZE_THREAD__)
extern "C" void AnnotateIgnoreReadsBegin(const char *file, int line);
extern "C" void AnnotateIgnoreReadsEnd(const char *file, int line);
extern "C" void AnnotateIgnoreWritesBegin(const char *file, int line);
extern "C" void AnnotateIgnoreWritesEnd(const char *file, int line);
#endif

namespace softnic {

class DmaScope {
  public:
#if defined(__SANITIZE_THREAD__)
    DmaScope() {
        AnnotateIgnoreReadsBegin(__FILE__, __LINE__);
        AnnotateIgnoreWritesBegin(__FILE__, __LINE__);
    }
    ~DmaScope() {
        AnnotateIgnoreWritesEnd(__FILE__, __LINE__);
        AnnotateIgnoreReadsEnd(__FILE__, __LINE__);
    }
#endif
    DmaScope(const DmaScope &) = delete;
    DmaScope &operator=(const DmaScope &) = delete;
#if !defined(__SANITIZE_THREAD__)
    // User-provided (not defaulted): a scope object is never an "unused variable".
    DmaScope() {}
    ~DmaScope() {}
#endif
};

}  // namespace softnic
