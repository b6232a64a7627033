// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// cxi_stat: the status of each soft NIC, in the shape of libCXI's cxi_stat. A soft NIC
// has no PCIe device, firmware or SerDes: those lines say so, and -r reports the rates
// of the interface and of the host's UDP stack that carry its traffic.
#include <err.h>
#include <getopt.h>
#include <libcxi/libcxi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace {

constexpr const char *kVersion = "1.5.5";

struct Options {
    bool list = false, macs = false, rates = false, addrs = false;
    std::string device;
    unsigned pause = 4;
};

std::string sysfs(const std::string &ifname, const std::string &file) {
    std::ifstream f("/sys/class/net/" + ifname + "/" + file);
    std::string s;
    std::getline(f, s);
    return s;
}

void usage(FILE *f) {
    std::fprintf(f,
                 "cxi_stat - CXI device status utility (softnic)\n"
                 "Usage: -hlm\n"
                 " -h --help             Show this help\n"
                 " -l --list             List all CXI devices\n"
                 " -m --mac-list         List all CXI MAC addresses\n"
                 " -n --nic-addr         Print the NIC address of each device (softnic: what\n"
                 "                       /sys/class/cxi/DEV/device/properties/nic_addr holds)\n"
                 " -d --device=DEV       List only specified CXI device\n"
                 "                       Default lists all CXI devices\n"
                 " -a --aer              Report AER statistics (none on a soft NIC)\n"
                 " -r --rates            Report packet, byte and drop rates\n"
                 " -p --pause=PAUSE      Pause time used for rate calculations, in seconds.\n"
                 "                       Default is 4\n"
                 " -V --version          Print the version and exit\n");
}

Options parse(int argc, char **argv) {
    static const option longs[] = {
        {"help", no_argument, nullptr, 'h'},         {"list", no_argument, nullptr, 'l'},
        {"mac-list", no_argument, nullptr, 'm'},     {"nic-addr", no_argument, nullptr, 'n'},
        {"device", required_argument, nullptr, 'd'}, {"aer", no_argument, nullptr, 'a'},
        {"rates", no_argument, nullptr, 'r'},        {"pause", required_argument, nullptr, 'p'},
        {"version", no_argument, nullptr, 'V'},      {nullptr, 0, nullptr, 0}};
    Options o;
    for (int c; (c = getopt_long(argc, argv, "hlmnd:arVp:", longs, nullptr)) != -1;) {
        char *end = nullptr;
        switch (c) {
            case 'l':
                o.list = true;
                break;
            case 'm':
                o.macs = true;
                break;
            case 'n':
                o.addrs = true;
                break;
            case 'd':
                o.device = optarg;
                break;
            case 'a':
                break;  // no PCIe, no AER: the section says so
            case 'r':
                o.rates = true;
                break;
            case 'p':
                o.pause = unsigned(std::strtoul(optarg, &end, 10));
                if (*end || o.pause < 1) errx(1, "Invalid pause: %s", optarg);
                break;
            case 'V':
                std::printf("cxi_stat version: %s\n", kVersion);
                std::exit(0);
            case 'h':
                usage(stdout);
                std::exit(0);
            default:
                usage(stderr);
                std::exit(1);
        }
    }
    if (optind < argc) errx(1, "Unexpected argument: %s", argv[optind]);
    return o;
}

// Counters of the interface (sysfs) and of the host's UDP stack (/proc/net/snmp).
std::map<std::string, uint64_t> sample(const std::string &ifname) {
    std::map<std::string, uint64_t> m;
    for (const char *k : {"rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "rx_dropped",
                          "tx_dropped", "rx_errors"})
        m[k] = std::strtoull(sysfs(ifname, std::string("statistics/") + k).c_str(), nullptr, 10);
    std::ifstream snmp("/proc/net/snmp");
    std::string names, values;
    while (std::getline(snmp, names) && std::getline(snmp, values)) {
        if (names.rfind("Udp:", 0) != 0) continue;
        std::istringstream n(names), v(values);
        std::string key, val;
        n >> key;
        v >> val;
        while (n >> key && v >> val)
            m["udp_" + key] = std::strtoull(val.c_str(), nullptr, 10);
    }
    return m;
}

void print_rates(const std::string &ifname, unsigned pause) {
    auto a = sample(ifname);
    sleep(pause);
    auto b = sample(ifname);
    auto rate = [&](const char *k) { return double(b[k] - a[k]) / pause; };
    std::printf("    Rates:\n");
    std::printf("        RX packets: %.2f/s\n", rate("rx_packets"));
    std::printf("        TX packets: %.2f/s\n", rate("tx_packets"));
    std::printf("        RX bytes: %.2f/s\n", rate("rx_bytes"));
    std::printf("        TX bytes: %.2f/s\n", rate("tx_bytes"));
    std::printf("        RX dropped: %.2f/s\n", rate("rx_dropped"));
    std::printf("        UDP datagrams in: %.2f/s\n", rate("udp_InDatagrams"));
    std::printf("        UDP datagrams out: %.2f/s\n", rate("udp_OutDatagrams"));
    std::printf("        UDP receive buffer errors: %.2f/s\n", rate("udp_RcvbufErrors"));
}

std::string ifname_of(const cxil_devinfo &i) {
    const char *p = std::strrchr(i.fru_description, ' ');  // "softnic <ifname>"
    return p ? p + 1 : "lo";
}

void print_device(const cxil_devinfo &i, const Options &o) {
    std::string ifn = ifname_of(i);
    std::string mac = sysfs(ifn, "address");
    std::string state = sysfs(ifn, "operstate");
    if (state == "unknown") state = "up";  // loopback reports no carrier state
    std::string speed = sysfs(ifn, "speed");
    std::printf("Device: %s\n", i.device_name);
    std::printf("    Description: %s\n", i.fru_description);
    std::printf("    Part Number: softnic\n");
    std::printf("    Serial Number: N/A\n");
    std::printf("    FW Version: N/A (software)\n");
    std::printf("    Network device: %s\n", ifn.c_str());
    std::printf("    MAC: %s\n", mac.c_str());
    std::printf("    NID: %u (0x%05x)\n", i.nid, i.nid);
    std::printf("    PID granule: %u\n", i.pid_granule);
    std::printf("    PCIE speed/width: N/A (software)\n");
    std::printf("    PCIE slot: N/A (software)\n");
    std::printf("        Link layer retry: off\n");
    std::printf("        Link loopback: %s\n", ifn == "lo" ? "on" : "off");
    std::printf("        Link media: software\n");
    std::printf("        Link MTU: %zu\n", i.link_mtu);
    std::printf("        Link speed: %s\n",
                speed.empty() || speed[0] == '-' ? "unknown" : (speed + " Mb/s").c_str());
    std::printf("        Link state: %s\n", state.empty() ? "unknown" : state.c_str());
    if (o.rates) print_rates(ifn, o.pause);
}

}  // namespace

int main(int argc, char **argv) {
    Options o = parse(argc, argv);
    cxil_device_list *l = nullptr;
    int rc = cxil_get_device_list(&l);
    if (rc) errx(1, "Failed to get the device list: %s", std::strerror(-rc));
    bool found = false;
    for (unsigned d = 0; d < l->count; d++) {
        const cxil_devinfo &i = l->info[d];
        if (!o.device.empty() && o.device != i.device_name) continue;
        found = true;
        if (o.list)
            std::printf("%s\n", i.device_name);
        else if (o.addrs)
            std::printf("0x%x\n", i.nid);
        else if (o.macs)
            std::printf("%s\n", sysfs(ifname_of(i), "address").c_str());
        else
            print_device(i, o);
    }
    cxil_free_device_list(l);
    if (!found && !o.device.empty()) errx(1, "Device %s not found", o.device.c_str());
    if (!found && !o.list && !o.macs && !o.addrs) std::printf("No CXI devices found\n");
    return 0;
}
