// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Configuration that arrives as text or bytes from outside the process: FI_CXI_FAULTS
// specs, FI_CXI_SOFT_NICS and FI_CXI_DEVICE_NAME lists, the CXI service registry file
// (written by whoever controls its directory) and cxi_service's YAML descriptions. The
// first input byte picks the parser, the rest is its input.
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "cxi/service_yaml.hpp"
#include "cxil/devices.hpp"
#include "cxil/service.hpp"
#include "transport/udp/fault.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    std::string in(reinterpret_cast<const char *>(data + 1), size - 1);
    switch (data[0] % 4) {
        case 0: {
            softnic::transport::udp::FaultConfig c;
            std::string err;
            softnic::transport::udp::parse_faults(in, c, err);
            break;
        }
        case 1: {
            size_t cut = in.find('\n');
            std::string nics = in.substr(0, cut), filter = cut == in.npos ? "" : in.substr(cut + 1);
            auto found = softnic::cxil::discover(nics, filter, [](const std::string &) {});
            (void)found;
            break;
        }
        case 2: {
            std::vector<softnic::cxil::Service> out;
            std::string why;
            softnic::cxil::Registry::parse(in, out, &why);
            break;
        }
        case 3: {
            char path[] = "/tmp/fuzz-service-XXXXXX";
            int fd = mkstemp(path);
            if (fd < 0) return 0;
            if (write(fd, in.data(), in.size()) == ssize_t(in.size())) {
                softnic::tools::ServiceSpec spec;
                std::string err;
                softnic::tools::parse_service_yaml(path, spec, err);
            }
            close(fd);
            unlink(path);
            break;
        }
    }
    return 0;
}
