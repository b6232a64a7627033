// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// FI_AV_AUTH_KEY (libfabric 1.20 and later; spec §3.4): a domain whose endpoints take
// their authorization keys from the AV. The getinfo rules for such hints and for more
// than one key per endpoint, fi_av_insert_auth_key / lookup / remove and FI_AUTH_KEY
// inserts, and one endpoint talking on two VNIs over both transports.
#include <rdma/fabric.h>

#if FI_MAJOR_VERSION > 1 || FI_MINOR_VERSION >= 20

#include <cstring>

#include "fixture.hpp"

namespace cxit {
namespace {

cxi_auth_key vni_key(uint16_t vni, uint32_t svc = 1) {
    cxi_auth_key k{};
    k.svc_id = svc;
    k.vni = vni;
    return k;
}

// Hints for a FI_AV_AUTH_KEY domain on `domain` with up to `max_keys` keys per endpoint.
InfoPtr av_key_hints(const char *domain, size_t max_keys, uint64_t caps) {
    EpOptions o;
    o.caps = caps;
    InfoPtr h = make_hints(o, domain);
    h->domain_attr->auth_key_size = FI_AV_AUTH_KEY;
    h->domain_attr->max_ep_auth_key = max_keys;
    return h;
}

long av_key_getinfo(const fi_info *hints, InfoPtr *out = nullptr) {
    fi_info *info = nullptr;
    long rc = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), nullptr, nullptr, 0, hints,
                         &info);
    if (out)
        out->reset(info);
    else if (info)
        fi_freeinfo(info);
    return rc;
}

// A FI_AV_AUTH_KEY domain and an endpoint on it, not yet enabled (members close in
// reverse order: the endpoint first).
struct AvKeyDomain {
    InfoPtr info;
    Fid<fid_domain> dom;
    EndpointPtr ep;
    void open(fid_fabric *fabric, const char *name, size_t max_keys, uint64_t caps) {
        InfoPtr h = av_key_hints(name, max_keys, caps);
        CXIT_CHECK(av_key_getinfo(h.get(), &info));
        CXIT_CHECK(CXIT_OPEN(dom, fi_domain(fabric, info.get(), OUT, nullptr)));
        EpOptions o;
        o.enable = false;
        ep = std::make_unique<Endpoint>(dom.get(), info.get(), o);
    }
    fi_addr_t add_key(uint16_t vni) {
        cxi_auth_key k = vni_key(vni);
        fi_addr_t h = FI_ADDR_NOTAVAIL;
        CXIT_CHECK(fi_av_insert_auth_key(ep->av(), &k, sizeof(k), &h, 0));
        return h;
    }
    // `peer`'s address reached under the key `handle` names.
    fi_addr_t insert_under(fi_addr_t handle, const std::vector<uint8_t> &peer) {
        fi_addr_t a = handle;
        EXPECT_RC(1, fi_av_insert(ep->av(), peer.data(), 1, &a, FI_AUTH_KEY, nullptr));
        return a;
    }
};

class AvAuthKeyTest : public CxiTest {
  protected:
    void open(const char *name, size_t max_keys = 2, uint64_t caps = FI_MSG | FI_TAGGED) {
        k_.open(fabric(), name, max_keys, caps);
        ep_ = k_.ep.get();
    }
    fi_addr_t add_key(uint16_t vni) { return k_.add_key(vni); }
    fi_addr_t insert_under(fi_addr_t h, const std::vector<uint8_t> &peer) {
        return k_.insert_under(h, peer);
    }

    AvKeyDomain k_;
    Endpoint *ep_ = nullptr;
};

TEST_F(AvAuthKeyTest, GetinfoRulesForAvKeysAndKeysPerEndpoint) {
    InfoPtr out;
    InfoPtr h = av_key_hints("cxi0", 0, FI_MSG | FI_TAGGED);
    ASSERT_RC(0, av_key_getinfo(h.get(), &out));
    EXPECT_EQ(FI_AV_AUTH_KEY, out->domain_attr->auth_key_size);
    EXPECT_EQ(nullptr, out->domain_attr->auth_key);
    EXPECT_GE(out->domain_attr->max_ep_auth_key, 1u) << "0 asks for the provider's default";

    h = av_key_hints("cxi0", 4, FI_MSG | FI_TAGGED);
    ASSERT_RC(0, av_key_getinfo(h.get(), &out)) << "four keys per endpoint";
    EXPECT_EQ(0u, out->caps & FI_DIRECTED_RECV) << "multi-key offers drop FI_DIRECTED_RECV";
    h = av_key_hints("cxi0", 5, FI_MSG | FI_TAGGED);
    EXPECT_RC(-FI_ENODATA, av_key_getinfo(h.get())) << "more keys than an endpoint takes";
    h = av_key_hints("cxi0", 2, FI_MSG | FI_TAGGED | FI_DIRECTED_RECV);
    EXPECT_RC(-FI_ENODATA, av_key_getinfo(h.get())) << "FI_DIRECTED_RECV with two keys";

    cxi_auth_key k = vni_key(1);
    h = av_key_hints("cxi0", 0, FI_MSG);
    h->domain_attr->auth_key = static_cast<uint8_t *>(calloc(1, sizeof(k)));
    EXPECT_RC(-FI_ENODATA, av_key_getinfo(h.get())) << "a domain key besides FI_AV_AUTH_KEY";
    h = av_key_hints("cxi0", 0, FI_MSG);
    h->ep_attr->auth_key_size = sizeof(k);
    EXPECT_RC(-FI_ENODATA, av_key_getinfo(h.get())) << "an endpoint key size";
}

TEST_F(AvAuthKeyTest, InsertLookupAndRemoveKeys) {
    open("cxi0", 2);
    cxi_auth_key k = vni_key(1), bad_vni = vni_key(5), other_svc = vni_key(1, 77);
    fi_addr_t h = FI_ADDR_NOTAVAIL, h2 = FI_ADDR_NOTAVAIL;
    EXPECT_RC(-FI_EINVAL, fi_av_insert_auth_key(ep_->av(), nullptr, sizeof(k), &h, 0));
    EXPECT_RC(-FI_EINVAL, fi_av_insert_auth_key(ep_->av(), &k, sizeof(k) - 1, &h, 0));
    EXPECT_RC(-FI_EINVAL, fi_av_insert_auth_key(ep_->av(), &k, sizeof(k), nullptr, 0));
    EXPECT_RC(-FI_EINVAL, fi_av_insert_auth_key(ep_->av(), &k, sizeof(k), &h, FI_MORE));
    EXPECT_RC(-FI_EINVAL, fi_av_insert_auth_key(ep_->av(), &bad_vni, sizeof(k), &h, 0))
        << "a VNI the service does not allow";
    EXPECT_RC(-FI_EINVAL, fi_av_insert_auth_key(ep_->av(), &other_svc, sizeof(k), &h, 0));
    ASSERT_RC(0, fi_av_insert_auth_key(ep_->av(), &k, sizeof(k), &h, 0));
    ASSERT_RC(0, fi_av_insert_auth_key(ep_->av(), &k, sizeof(k), &h2, 0));
    EXPECT_EQ(h, h2) << "the same key twice: one handle";
    fi_addr_t h10 = add_key(10);
    EXPECT_NE(h, h10);
    cxi_auth_key third = vni_key(10, 0);
    fi_addr_t h3 = FI_ADDR_NOTAVAIL;
    EXPECT_RC(0, fi_av_insert_auth_key(ep_->av(), &third, sizeof(third), &h3, 0))
        << "svc_id 0: the domain's service, VNI 10 again";
    EXPECT_EQ(h10, h3);

    cxi_auth_key got{};
    size_t size = sizeof(got);
    EXPECT_RC(-FI_EINVAL, fi_av_lookup_auth_key(ep_->av(), h10, nullptr, &size));
    EXPECT_RC(-FI_EINVAL, fi_av_lookup_auth_key(ep_->av(), h10, &got, nullptr));
    ASSERT_RC(0, fi_av_lookup_auth_key(ep_->av(), h10, &got, &size));
    EXPECT_EQ(sizeof(got), size);
    EXPECT_EQ(10u, got.vni);
    EXPECT_RC(-FI_EINVAL, fi_av_lookup_auth_key(ep_->av(), 99, &got, &size));

    std::vector<uint8_t> peer(sizeof(uint64_t), 0);
    fi_addr_t a = h10;
    EXPECT_RC(-FI_EINVAL, fi_av_insert(ep_->av(), peer.data(), 1, &a, 0, nullptr))
        << "an AV of a FI_AV_AUTH_KEY domain takes addresses under a key";
    EXPECT_RC(-FI_EINVAL,
              fi_av_insert(ep_->av(), peer.data(), 1, &a, FI_AUTH_KEY | FI_AV_USER_ID, nullptr));
    a = 99;
    EXPECT_RC(0, fi_av_insert(ep_->av(), peer.data(), 1, &a, FI_AUTH_KEY, nullptr))
        << "a handle that names no key";
    EXPECT_EQ(FI_ADDR_NOTAVAIL, a);
    fi_addr_t on1 = insert_under(h, peer), on10 = insert_under(h10, peer);
    EXPECT_NE(on1, on10) << "one address under two keys: two peers";
    EXPECT_RC(0, fi_av_set_user_id(ep_->av(), h10, 0xabc, FI_AUTH_KEY));

    ep_->enable();
    EXPECT_RC(-FI_EBUSY, fi_av_remove(ep_->av(), &h10, 1, FI_AUTH_KEY))
        << "an enabled endpoint uses the key";
    EXPECT_RC(0, fi_av_remove(ep_->av(), &on10, 1, 0));
}

TEST_F(AvAuthKeyTest, KeysAreBoundedAndNeededAtEnable) {
    open("cxi0", 1);
    EXPECT_RC(-FI_EINVAL, fi_enable(ep_->ep())) << "no key in the AV";
    add_key(1);
    cxi_auth_key k = vni_key(10);
    fi_addr_t h = FI_ADDR_NOTAVAIL;
    EXPECT_RC(-FI_ENOSPC, fi_av_insert_auth_key(ep_->av(), &k, sizeof(k), &h, 0))
        << "max_ep_auth_key is 1";
    ep_->enable();
}

TEST_F(AvAuthKeyTest, AnEndpointKeyIsRefusedWithAvKeys) {
    open("cxi0", 1, FI_MSG);
    fi_info &info = *k_.info;
    cxi_auth_key k = vni_key(1);
    info.ep_attr->auth_key = static_cast<uint8_t *>(calloc(1, sizeof(k)));
    memcpy(info.ep_attr->auth_key, &k, sizeof(k));
    info.ep_attr->auth_key_size = sizeof(k);
    Fid<fid_ep> ep;
    EXPECT_RC(-FI_EINVAL, CXIT_OPEN(ep, fi_endpoint(k_.dom.get(), &info, OUT, nullptr)));
}

// One endpoint with keys for VNIs 1 and 10 talks with a peer on each; FI_SOURCE names
// each sender by the address inserted under its VNI's key.
class AvAuthKeyTransportTest : public TransportTest {
  protected:
    AvKeyDomain k_;
};

TEST_P(AvAuthKeyTransportTest, OneEndpointTalksOnEachVniOfItsKeys) {
    k_.open(fabric(), "cxi0", 2, FI_MSG | FI_TAGGED | FI_SOURCE);
    Endpoint *me = k_.ep.get();
    fi_addr_t keys[2] = {k_.add_key(1), k_.add_key(10)};
    me->enable();

    EndpointPtr peer[2];
    fi_addr_t to_peer[2], to_us[2];
    for (int i = 0; i < 2; i++) {
        EpOptions o;
        o.auth_key = vni_key(i ? 10 : 1);
        o.caps = FI_MSG | FI_TAGGED | FI_SOURCE;
        peer[i] = make_ep(peer_domain(), o);
        to_peer[i] = k_.insert_under(keys[i], peer[i]->name());
        to_us[i] = peer[i]->insert(me->name());
    }
    for (int i = 0; i < 2; i++) {
        ping(*me, to_peer[i], *peer[i], 64, 3 + i);
        ping(*me, to_peer[i], *peer[i], 20000, 5 + i, true, 7);  // past the eager size
        std::vector<uint8_t> buf(64);
        int ctx = 0;
        ASSERT_RC(0, fi_recv(me->ep(), buf.data(), buf.size(), nullptr, FI_ADDR_UNSPEC, &ctx));
        post([&] { return fi_send(peer[i]->ep(), buf.data(), 32, nullptr, to_us[i], nullptr); },
             "send to the multi-VNI endpoint");
        Comp c = wait_comp(me->rx(), &ctx, "receive from the peer on VNI " + std::to_string(i));
        EXPECT_EQ(to_peer[i], c.src) << "FI_SOURCE: the address under that VNI's key";
        wait_any(peer[i]->tx(), "the peer's send completion");
    }
}

CXIT_INSTANTIATE_TRANSPORTS(AvAuthKeyTransportTest);

}  // namespace
}  // namespace cxit

#endif
