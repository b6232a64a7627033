// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Provider parameters, declared and read through libfabric's fi_param_* API so that
// `fi_info -e` lists them and FI_<PROV>_<NAME> environment variables set them.
#pragma once

#include <cstddef>
#include <string>

#include "common/log.hpp"

namespace softnic::params {

void define_bool(const fi_provider *p, const char *name, const char *help);
void define_int(const fi_provider *p, const char *name, const char *help);
void define_size(const fi_provider *p, const char *name, const char *help);
void define_str(const fi_provider *p, const char *name, const char *help);

// Each returns true when the variable was set (and parsed), leaving `out` alone otherwise.
bool get_bool(const fi_provider *p, const char *name, bool &out);
bool get_int(const fi_provider *p, const char *name, int &out);
bool get_size(const fi_provider *p, const char *name, size_t &out);
bool get_str(const fi_provider *p, const char *name, std::string &out);

}  // namespace softnic::params
