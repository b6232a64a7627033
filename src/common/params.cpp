// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "common/params.hpp"

namespace softnic::params {
namespace {

// The core keeps the provider pointer it was handed; its API is not const-correct.
fi_provider *mut(const fi_provider *p) {
    return const_cast<fi_provider *>(p);
}

}  // namespace

void define_bool(const fi_provider *p, const char *name, const char *help) {
    fi_param_define(p, name, FI_PARAM_BOOL, "%s", help);
}
void define_int(const fi_provider *p, const char *name, const char *help) {
    fi_param_define(p, name, FI_PARAM_INT, "%s", help);
}
void define_size(const fi_provider *p, const char *name, const char *help) {
    fi_param_define(p, name, FI_PARAM_SIZE_T, "%s", help);
}
void define_str(const fi_provider *p, const char *name, const char *help) {
    fi_param_define(p, name, FI_PARAM_STRING, "%s", help);
}

bool get_bool(const fi_provider *p, const char *name, bool &out) {
    int v = 0;
    if (fi_param_get_bool(mut(p), name, &v) != FI_SUCCESS) return false;
    out = v != 0;
    return true;
}
bool get_int(const fi_provider *p, const char *name, int &out) {
    return fi_param_get_int(mut(p), name, &out) == FI_SUCCESS;
}
bool get_size(const fi_provider *p, const char *name, size_t &out) {
    return fi_param_get_size_t(mut(p), name, &out) == FI_SUCCESS;
}
bool get_str(const fi_provider *p, const char *name, std::string &out) {
    char *v = nullptr;
    if (fi_param_get_str(mut(p), name, &v) != FI_SUCCESS || !v) return false;
    out = v;
    return true;
}

}  // namespace softnic::params
