// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// cxi_service: create, delete, enable, disable and list the CXI services of a soft NIC,
// with libCXI's cxi_service options and output.
#include <err.h>
#include <getopt.h>
#include <libcxi/libcxi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "service_yaml.hpp"

namespace {

constexpr const char *kVersion = "0.6.0";

struct Options {
    unsigned dev = 0;
    int svc_id = 0;
    bool verbose = false;
    std::string yaml, command;
};

void usage(FILE *f) {
    std::fprintf(f,
                 "cxi_service - Create and manage CXI services (softnic)\n"
                 "Usage: cxi_service <COMMAND> [options]\n"
                 " -d --device=DEV       CXI device. Default is cxi0\n"
                 " -h --help             Show this help\n"
                 " -s --svc-id           Only apply commands to this specific svc_id\n"
                 " -V --version          Print the version and exit\n"
                 " -v --verbose          Increase verbosity\n"
                 " -y --yaml-file        Path to yaml file to use with 'create' and 'update' "
                 "commands\n"
                 "\n"
                 "Commands:\n"
                 " create                Create a service\n"
                 " delete                Delete the service given with -s\n"
                 " disable               Disable the service given with -s\n"
                 " enable                Enable the service given with -s\n"
                 " list                  List all services (or the one given with -s)\n");
}

Options parse(int argc, char **argv) {
    static const option longs[] = {{"device", required_argument, nullptr, 'd'},
                                   {"dry_run", no_argument, nullptr, 'D'},
                                   {"dry-run", no_argument, nullptr, 'D'},
                                   {"help", no_argument, nullptr, 'h'},
                                   {"svc_id", required_argument, nullptr, 's'},
                                   {"svc-id", required_argument, nullptr, 's'},
                                   {"verbose", no_argument, nullptr, 'v'},
                                   {"version", no_argument, nullptr, 'V'},
                                   {"yaml_file", required_argument, nullptr, 'y'},
                                   {"yaml-file", required_argument, nullptr, 'y'},
                                   {nullptr, 0, nullptr, 0}};
    Options o;
    for (int c; (c = getopt_long(argc, argv, "hvd:l:s:y:V", longs, nullptr)) != -1;) {
        char *end = nullptr;
        switch (c) {
            case 'd':
                if (std::strlen(optarg) < 4 || std::strncmp(optarg, "cxi", 3) ||
                    std::strspn(optarg + 3, "0123456789") != std::strlen(optarg + 3))
                    errx(1, "Invalid device name: %s", optarg);
                o.dev = unsigned(std::strtoul(optarg + 3, nullptr, 10));
                break;
            case 's': {
                long v = std::strtol(optarg, &end, 10);
                if (*end || v < 1 || v > 0x7fffffff) errx(1, "Invalid svc_id: %s", optarg);
                o.svc_id = int(v);
                break;
            }
            case 'y':
                o.yaml = optarg;
                break;
            case 'v':
                o.verbose = true;
                break;
            case 'l':  // lnis_per_rgid: accepted, unused (as upstream)
            case 'D':
                break;
            case 'V':
                std::printf("cxi_service version: %s\n", kVersion);
                std::exit(0);
            case 'h':
                usage(stderr);
                std::exit(0);
            default:
                usage(stderr);
                std::exit(1);
        }
    }
    for (int i = optind; i < argc; i++) {
        std::string w = argv[i];
        if (w != "create" && w != "delete" && w != "disable" && w != "enable" && w != "list" &&
            w != "update")
            errx(1, "Unexpected argument: %s", argv[i]);
        if (!o.command.empty()) errx(1, "Only one command may be specified");
        o.command = w;
    }
    if (o.command.empty()) o.command = "list";
    return o;
}

const char *yes(bool b) {
    return b ? "Yes" : "No";
}

void print_line(const char *label, const std::string &value) {
    std::printf("   %-19s: %s\n", label, value.c_str());
}

constexpr cxi_rsrc_type kListOrder[] = {CXI_RSRC_TYPE_AC,  CXI_RSRC_TYPE_CT,  CXI_RSRC_TYPE_EQ,
                                        CXI_RSRC_TYPE_LE,  CXI_RSRC_TYPE_PTE, CXI_RSRC_TYPE_TGQ,
                                        CXI_RSRC_TYPE_TXQ, CXI_RSRC_TYPE_TLE};

std::string members_of(cxil_dev *dev, const cxi_svc_desc &d) {
    if (!d.restricted_members) return "All uids/gids";
    std::string s;
    for (const auto &m : d.members) {
        if (m.type == CXI_SVC_MEMBER_UID) s += "uid=" + std::to_string(m.svc_member.uid) + " ";
        if (m.type == CXI_SVC_MEMBER_GID) s += "gid=" + std::to_string(m.svc_member.gid) + " ";
    }
    unsigned netns = 0;
    if (cxil_svc_get_netns(dev, d.svc_id, &netns) == 0 && netns)
        s += "netns=" + std::to_string(netns) + " ";
    return s.empty() ? "None" : s;
}

std::string vnis_of(cxil_dev *dev, const cxi_svc_desc &d) {
    if (d.restricted_vnis) {
        std::string s;
        for (int i = 0; i < d.num_vld_vnis; i++)
            s += std::to_string(d.vnis[i]) + " ";
        return s;
    }
    uint16_t lo = 0, hi = 0;
    if (cxil_svc_get_vni_range(dev, d.svc_id, &lo, &hi) == 0)
        return std::to_string(lo) + "-" + std::to_string(hi);
    return "Any";
}

std::string tcs_of(const cxi_svc_desc &d) {
    if (!d.restricted_tcs) return "All";
    std::string s;
    for (int t = 0; t < CXI_TC_MAX; t++)
        if (d.tcs[t]) s += std::string(cxi_tc_to_str(cxi_traffic_class(t))) + " ";
    return s;
}

void print_limits(const cxi_svc_desc &d, const cxi_rsrc_use &use) {
    const char *rule = "          ---------------------------------\n";
    if (!d.resource_limits) {
        print_line("---> Max", "Max");
        print_line("---> Reserved", "None");
        std::printf("          -----------\n          |  In Use |\n          -----------\n");
        for (cxi_rsrc_type t : kListOrder)
            std::printf("     %-4s |  %-5u  |\n", cxi_rsrc_type_to_str(t), use.in_use[t]);
        std::printf("          -----------\n");
        return;
    }
    std::printf("%s          |  Max    |  Reserved |  In Use |\n%s", rule, rule);
    for (cxi_rsrc_type t : kListOrder)
        std::printf("     %-4s |  %-5u  |   %-5u   |  %-5u  |\n", cxi_rsrc_type_to_str(t),
                    d.limits.type[t].max, d.limits.type[t].res, use.in_use[t]);
    std::printf("%s", rule);
}

void print_service(cxil_dev *dev, const cxi_svc_desc &d, bool verbose) {
    std::printf(" --------------------------\n ID: %u%s\n", d.svc_id,
                d.svc_id == CXI_DEFAULT_SVC_ID ? " (DEFAULT)" : "");
    int lpr = cxil_get_svc_lpr(dev, d.svc_id);
    print_line("LNIs/RGID", lpr < 0 ? "N/A" : std::to_string(lpr));
    print_line("Enabled", yes(d.enable));
    print_line("System Service", yes(d.is_system_svc));
    print_line("Restricted Members", yes(d.restricted_members));
    if (verbose) print_line("---> Valid Members", members_of(dev, d));
    if (verbose) print_line("VNIs", vnis_of(dev, d));
    bool excl = false;
    if (verbose && !d.restricted_vnis && cxil_svc_get_exclusive_cp(dev, d.svc_id, &excl) == 0)
        print_line("Exclusive CP", yes(excl));
    print_line("Restricted TCs", yes(d.restricted_tcs));
    if (verbose) print_line("---> Valid TCs", tcs_of(d));
    print_line("Resource Limits", yes(d.resource_limits));
    if (!verbose) return;
    cxi_rsrc_use use{};
    cxil_get_svc_rsrc_use(dev, d.svc_id, &use);
    print_limits(d, use);
}

int list(cxil_dev *dev, const Options &o) {
    if (o.svc_id) {
        cxi_svc_desc d{};
        int rc = cxil_get_svc(dev, unsigned(o.svc_id), &d);
        if (rc) errx(1, "Failed to get service_id %d: %s", o.svc_id, std::strerror(-rc));
        print_service(dev, d, o.verbose);
        return 0;
    }
    cxil_svc_list *l = nullptr;
    int rc = cxil_get_svc_list(dev, &l);
    if (rc) errx(1, "Failed to get the service list: %s", std::strerror(-rc));
    std::printf("%s\n----\n Total Device Resources\n ----------------------\n",
                dev->info.device_name);
    const uint16_t *tot[CXI_RSRC_TYPE_MAX] = {
        &dev->info.num_ptes, &dev->info.num_txqs, &dev->info.num_tgqs, &dev->info.num_eqs,
        &dev->info.num_cts,  &dev->info.num_les,  &dev->info.num_tles, &dev->info.num_acs};
    for (cxi_rsrc_type t : kListOrder) {
        std::string label = std::string(cxi_rsrc_type_to_str(t)) + ":";
        std::printf(" %-5s %u\n", label.c_str(), *tot[t]);
    }
    for (unsigned i = 0; i < l->count; i++)
        print_service(dev, l->descs[i], o.verbose);
    cxil_free_svc_list(l);
    return 0;
}

int create(cxil_dev *dev, const Options &o) {
    if (o.yaml.empty()) errx(1, "Create command requires -y / --yaml_file");
    if (o.svc_id) errx(1, "Create command does not take -s / --svc_id");
    softnic::tools::ServiceSpec spec;
    std::string why;
    if (!softnic::tools::parse_service_yaml(o.yaml, spec, why)) errx(1, "%s", why.c_str());
    cxi_svc_fail_info fail{};
    int id = cxil_alloc_svc(dev, &spec.desc, &fail);
    if (id < 0) errx(1, "Failed to create service: %s", std::strerror(-id));
    auto undo = [&](const char *what, int rc) {
        cxil_destroy_svc(dev, unsigned(id));
        errx(1, "%s: %s", what, std::strerror(-rc));
    };
    if (spec.has_range) {
        int rc = cxil_svc_set_vni_range(dev, unsigned(id), spec.vni_min, spec.vni_max);
        if (rc) {
            cxil_destroy_svc(dev, unsigned(id));
            errx(1, "Failed to set vni range: %u-%u %s", spec.vni_min, spec.vni_max,
                 std::strerror(-rc));
        }
        if ((rc = cxil_svc_enable(dev, unsigned(id), true))) undo("Failed to enable service", rc);
    }
    if (spec.has_netns) {
        int rc = cxil_svc_set_netns(dev, unsigned(id), spec.netns);
        if (rc) undo("Failed to set netns", rc);
    }
    if (spec.exclusive_cp) {
        int rc = cxil_svc_set_exclusive_cp(dev, unsigned(id), true);
        if (rc) undo("Failed to set exclusive_cp", rc);
    }
    cxi_svc_desc d{};
    if (cxil_get_svc(dev, unsigned(id), &d) == 0) print_service(dev, d, true);
    std::printf("\nSuccessfully created service: %d\n", id);
    return 0;
}

int change(cxil_dev *dev, const Options &o) {
    const std::string &c = o.command;
    if (!o.svc_id) {
        std::string cap = c;
        cap[0] = char(std::toupper(cap[0]));
        errx(1, "%s command requires -s / --svc_id", cap.c_str());
    }
    unsigned id = unsigned(o.svc_id);
    if (c == "delete" && id == CXI_DEFAULT_SVC_ID) errx(1, "Default service cannot be deleted.");
    cxi_svc_desc d{};
    int rc = cxil_get_svc(dev, id, &d);
    if (rc) errx(1, "Failed to get service_id %d: %s", o.svc_id, std::strerror(-rc));
    rc = c == "delete" ? cxil_destroy_svc(dev, id) : cxil_svc_enable(dev, id, c == "enable");
    if (rc) errx(1, "Failed to %s service %u: %s", c.c_str(), id, std::strerror(-rc));
    const char *done = c == "delete" ? "deleted" : c == "enable" ? "enabled" : "disabled";
    std::printf("Successfully %s service: %u\n", done, id);
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    Options o = parse(argc, argv);
    if (o.command == "update") errx(1, "update command is deprecated");
    cxil_dev *dev = nullptr;
    int rc = cxil_open_device(o.dev, &dev);
    if (rc) errx(1, "Failed to open device cxi%u: %s", o.dev, std::strerror(-rc));
    int ret = o.command == "list"     ? list(dev, o)
              : o.command == "create" ? create(dev, o)
                                      : change(dev, o);
    cxil_close_device(dev);
    return ret;
}
