// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Keys are recognised wherever they appear, as cxi_service does: flags (0 or 1),
// `limits` (a list of {name, max, res}), `vnis` (repeated `vni`, or `vni_min`/`vni_max`),
// `members` (a list of {type: uid|gid|netns, id}) and `tcs` (repeated `tc`).
#include "service_yaml.hpp"

#include <yaml.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

namespace softnic::tools {
namespace {

// The document as a tree; mappings keep repeated keys (`vni: 1` twice is a list).
struct MapEntry;  // (a std::pair would need Node complete: clang with libstdc++ refuses)
struct Node {
    enum Kind { kScalar, kMap, kSeq } kind = kScalar;
    std::string value;
    std::vector<MapEntry> map;
    std::vector<Node> seq;
};
struct MapEntry {
    std::string key;
    Node node;
};

class Reader {
  public:
    explicit Reader(FILE *f) {
        yaml_parser_initialize(&p_);
        yaml_parser_set_input_file(&p_, f);
    }
    ~Reader() { yaml_parser_delete(&p_); }

    // The first document's root; false on a syntax error.
    bool document(Node &root) {
        yaml_event_t e;
        while (next(e)) {
            yaml_event_type_t t = e.type;
            if (t == YAML_STREAM_END_EVENT) {
                yaml_event_delete(&e);
                return true;  // empty file: an empty service
            }
            if (t == YAML_MAPPING_START_EVENT || t == YAML_SEQUENCE_START_EVENT ||
                t == YAML_SCALAR_EVENT)
                return node(e, root);
            yaml_event_delete(&e);
        }
        return false;
    }

  private:
    bool next(yaml_event_t &e) { return yaml_parser_parse(&p_, &e) == 1; }

    // Build the node that starts with event `e` (which this call deletes).
    bool node(yaml_event_t &e, Node &out) {
        yaml_event_type_t t = e.type;
        if (t == YAML_SCALAR_EVENT) {
            out.kind = Node::kScalar;
            out.value.assign(reinterpret_cast<char *>(e.data.scalar.value), e.data.scalar.length);
            yaml_event_delete(&e);
            return true;
        }
        yaml_event_delete(&e);
        if (t != YAML_MAPPING_START_EVENT && t != YAML_SEQUENCE_START_EVENT) return false;
        out.kind = t == YAML_MAPPING_START_EVENT ? Node::kMap : Node::kSeq;
        yaml_event_type_t end =
            t == YAML_MAPPING_START_EVENT ? YAML_MAPPING_END_EVENT : YAML_SEQUENCE_END_EVENT;
        for (;;) {
            yaml_event_t c;
            if (!next(c)) return false;
            if (c.type == end) {
                yaml_event_delete(&c);
                return true;
            }
            Node child;
            if (!node(c, child)) return false;
            if (out.kind == Node::kSeq) {
                out.seq.push_back(std::move(child));
                continue;
            }
            if (child.kind != Node::kScalar) return false;  // keys are scalars
            yaml_event_t v;
            if (!next(v)) return false;
            Node value;
            if (!node(v, value)) return false;
            out.map.push_back(MapEntry{child.value, std::move(value)});
        }
    }

    yaml_parser_t p_;
};

bool to_uint(const std::string &s, unsigned long max, unsigned long &out) {
    if (s.empty() || s[0] == '-') return false;
    char *end = nullptr;
    errno = 0;
    out = std::strtoul(s.c_str(), &end, 0);
    return !errno && *end == '\0' && out <= max;
}

const std::string *field(const Node &m, const char *key) {
    for (const auto &[k, v] : m.map)
        if (k == key && v.kind == Node::kScalar) return &v.value;
    return nullptr;
}

class Builder {
  public:
    explicit Builder(ServiceSpec &s) : s_(s), d_(s.desc) {}

    bool walk(const Node &n) {
        if (n.kind == Node::kSeq) {
            for (const Node &c : n.seq)
                if (!walk(c)) return false;
            return true;
        }
        if (n.kind != Node::kMap) return fail("Unexpected event while processing yaml");
        for (const auto &[k, v] : n.map) {
            bool ok = v.kind == Node::kScalar ? scalar(k, v.value)
                      : k == "limits"         ? items(v, &Builder::limit)
                      : k == "members"        ? items(v, &Builder::member)
                                              : walk(v);
            if (!ok) return false;
        }
        return true;
    }
    std::string err;

  private:
    bool fail(const std::string &m) {
        err = m;
        return false;
    }

    bool scalar(const std::string &key, const std::string &v) {
        static const char *const flags[] = {"resource_limits", "restricted_members",
                                            "restricted_vnis", "restricted_tcs", "exclusive_cp"};
        for (const char *f : flags) {
            if (key != f) continue;
            if (v != "0" && v != "1") return fail("Invalid value for '" + key + "'");
            bool on = v == "1";
            if (key == "resource_limits") d_.resource_limits = on;
            if (key == "restricted_members") d_.restricted_members = on;
            if (key == "restricted_vnis") d_.restricted_vnis = on;
            if (key == "restricted_tcs") d_.restricted_tcs = on;
            if (key == "exclusive_cp") s_.exclusive_cp = on;
            return true;
        }
        unsigned long n = 0;
        if (key == "vni") {
            if (s_.has_range) return fail("vni range already specified");
            if (!to_uint(v, 0xffff, n)) return fail("Invalid value for 'vni'");
            if (d_.num_vld_vnis >= CXI_SVC_MAX_VNIS) return fail("Too many VNIs provided");
            d_.restricted_vnis = 1;
            d_.vnis[d_.num_vld_vnis++] = uint16_t(n);
            return true;
        }
        if (key == "vni_min" || key == "vni_max") {
            if (d_.num_vld_vnis) return fail("vni list already specified");
            if (!to_uint(v, 0xffff, n)) return fail("Invalid value for '" + key + "'");
            (key == "vni_min" ? s_.vni_min : s_.vni_max) = uint16_t(n);
            s_.has_range = true;
            d_.restricted_vnis = 0;
            return true;
        }
        if (key == "tc") {
            for (int t = CXI_TC_DEDICATED_ACCESS; t <= CXI_TC_BEST_EFFORT; t++)
                if (v == cxi_tc_to_str(cxi_traffic_class(t)) ||
                    (t == CXI_TC_BULK_DATA && v == "BULK DATA")) {
                    d_.tcs[t] = true;
                    return true;
                }
            return fail("Invalid TC provided: " + v);
        }
        return fail("Unexpected event while processing yaml");
    }

    bool items(const Node &list, bool (Builder::*one)(const Node &)) {
        if (list.kind != Node::kSeq) return fail("Unexpected event while processing yaml");
        for (const Node &item : list.seq) {
            if (item.kind != Node::kMap) return fail("Unexpected event while processing yaml");
            if (!(this->*one)(item)) return false;
        }
        return true;
    }

    bool limit(const Node &m) {
        const std::string *name = field(m, "name"), *max = field(m, "max"), *res = field(m, "res");
        unsigned long mx = 0, rs = 0;
        if (!name) return fail("Resource limit without a name");
        if ((max && !to_uint(*max, 0xffff, mx)) || (res && !to_uint(*res, 0xffff, rs)))
            return fail("Invalid value for '" + *name + "' limits");
        for (int t = 0; t < CXI_RSRC_TYPE_MAX; t++)
            if (*name == cxi_rsrc_type_to_str(cxi_rsrc_type(t))) {
                d_.limits.type[t] = cxi_limits{uint16_t(mx), uint16_t(rs)};
                return true;
            }
        return fail("Invalid resource name: " + *name);
    }

    bool member(const Node &m) {
        const std::string *type = field(m, "type"), *id = field(m, "id");
        unsigned long n = 0;
        if (!type || !id || !to_uint(*id, 0xffffffffUL, n)) return fail("Invalid service member");
        if (*type == "netns") {
            s_.netns = unsigned(n);
            s_.has_netns = true;
            return true;
        }
        if (members_ >= CXI_SVC_MAX_MEMBERS) return fail("Too many Service 'Members' provided");
        auto &slot = d_.members[members_++];
        if (*type == "uid") {
            slot.type = CXI_SVC_MEMBER_UID;
            slot.svc_member.uid = uid_t(n);
        } else if (*type == "gid") {
            slot.type = CXI_SVC_MEMBER_GID;
            slot.svc_member.gid = gid_t(n);
        } else {
            return fail("Invalid member type: " + *type);
        }
        return true;
    }

    ServiceSpec &s_;
    cxi_svc_desc &d_;
    int members_ = 0;
};

bool members_used(const ServiceSpec &s) {
    for (const auto &m : s.desc.members)
        if (m.type != CXI_SVC_MEMBER_IGNORE) return true;
    return false;
}

}  // namespace

bool parse_service_yaml(const std::string &path, ServiceSpec &out, std::string &err) {
    FILE *f = std::fopen(path.c_str(), "r");
    if (!f) {
        err = "Failed to open " + path;
        return false;
    }
    Node root;
    bool ok = Reader(f).document(root);
    std::fclose(f);
    if (!ok) {
        err = "Failed to parse yaml file " + path;
        return false;
    }
    out = ServiceSpec{};
    Builder b(out);
    if (root.kind == Node::kScalar && root.value.empty()) return true;
    if (!b.walk(root)) {
        err = b.err;
        return false;
    }
    if (out.has_netns && (members_used(out) || !out.desc.restricted_members)) {
        err = "netns members need restricted_members and no uid/gid member";
        return false;
    }
    return true;
}

}  // namespace softnic::tools
