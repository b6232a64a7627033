#include "common/fid.hpp"

namespace softnic {

int fid_no_bind(fid *, fid *, uint64_t) {
    return -FI_ENOSYS;
}
int fid_no_control(fid *, int, void *) {
    return -FI_ENOSYS;
}
int fid_no_ops_open(fid *, const char *, uint64_t, void **, void *) {
    return -FI_ENOSYS;
}

}  // namespace softnic
