// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Endpoint control path: binding, enabling (claiming PIDs), fi_control, options, names.
#include <rdma/fi_cxi_ext.h>
#include <rdma/fi_domain.h>

#include <cstring>

#include "common/eq.hpp"
#include "common/log.hpp"
#include "cxi/obj/domain.hpp"
#include "cxi/obj/endpoint.hpp"

namespace softnic::cxi {

int Endpoint::bind(EpView &v, struct fid *bfid, uint64_t flags) {
    if (!bfid) SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "NULL object to bind\n");
    switch (bfid->fclass) {
        case FI_CLASS_CQ:
            return bind_cq(v, owner_of_fid<Cq, fid_cq>(bfid), flags);
        case FI_CLASS_CNTR:
            return bind_cntr(v, owner_of_fid<Cntr, fid_cntr>(bfid), flags);
        case FI_CLASS_AV: {
            if (v.engine && scalable_)
                SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "bind the AV to the SEP\n");
            if (av_) SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "an AV is already bound\n");
            av_ = owner_of_fid<Av, fid_av>(bfid);
            av_->refs().get();
            for (auto &c : engines_)
                c->set_av(av_);
            return 0;
        }
        case FI_CLASS_EQ:
            eq_ = bfid;
            return 0;
        default:
            SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "cannot bind object class %zu\n", bfid->fclass);
    }
}

int Endpoint::bind_cq(EpView &v, Cq *cq, uint64_t flags) {
    if (flags & ~(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION))
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "bad CQ bind flags 0x%lx\n", flags);
    if (!v.engine) SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "bind CQs to the SEP's contexts\n");
    if (cq->domain_serial() != domain_.serial())  // one domain's promise (serial.hpp)
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL,
                  "a CQ of another domain, under FI_THREAD_DOMAIN in one of them\n");
    bool sel = flags & FI_SELECTIVE_COMPLETION;
    bool tx = (flags & FI_TRANSMIT) && (v.side & kTx);
    bool rx = (flags & FI_RECV) && (v.side & kRx);
    if ((tx && v.engine->tx_bind().cq) || (rx && v.engine->rx_bind().cq))
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "a CQ is already bound for that direction\n");
    // FI_THREAD_COMPLETION: the CQ's lock chosen before this engine can complete into it
    if (tx || rx) cq->bind_engine(v.engine->own_serial());
    if (tx) {
        v.engine->tx_bind().cq = cq;
        v.engine->tx_bind().selective = sel;
        cq->refs().get();
    }
    if (rx) {
        v.engine->rx_bind().cq = cq;
        v.engine->rx_bind().selective = sel;
        cq->refs().get();
    }
    return 0;
}

int Endpoint::bind_cntr(EpView &v, Cntr *cntr, uint64_t flags) {
    constexpr uint64_t kAll =
        FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
    if (flags & ~kAll) SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "bad counter bind flags\n");
    if (!v.engine) SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "bind counters to the SEP's contexts\n");
    if (cntr->serial() != domain_.serial())
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL,
                  "a counter of another domain, under FI_THREAD_DOMAIN in one of them\n");
    CompletionBind &t = v.engine->tx_bind(), &r = v.engine->rx_bind();
    bool tx_side = v.side & kTx;
    // The events asked for, each with the slot its counter goes into.
    std::pair<bool, Cntr **> slots[] = {
        {(flags & FI_SEND) && tx_side, &t.cntr},
        {(flags & FI_RECV) && (v.side & kRx), &r.cntr},
        {(flags & FI_WRITE) && tx_side, &t.write_cntr},
        {(flags & FI_READ) && tx_side, &t.read_cntr},
        {(flags & FI_REMOTE_WRITE) && (v.side & kRx), &r.write_cntr},
        {(flags & FI_REMOTE_READ) && (v.side & kRx), &r.read_cntr}};
    for (auto &[wanted, slot] : slots)
        if (wanted && *slot)
            SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "a counter is already bound for that event\n");
    for (auto &[wanted, slot] : slots) {
        if (!wanted) continue;
        *slot = cntr;
        cntr->refs().get();
    }
    return 0;
}

void Endpoint::attach_progress(PidEngine &c) {
    for (CompletionBind *b : {&c.tx_bind(), &c.rx_bind()}) {
        if (b->cq) b->cq->progress().add(c.progress_source());
        for (Cntr *cn : b->cntrs())
            if (cn) cn->progress().add(c.progress_source());
    }
}

// Claim PIDs pid.. for the endpoint's contexts (kPidAny: the first free range).
bool Endpoint::claim_pids(uint32_t pid) {
    size_t n = engines_.size();
    const bool searching = pid == kPidAny;
    uint32_t first = searching ? 0 : pid;
    uint32_t last = searching ? kMaxPid + 1 - uint32_t(n) : pid;
    for (uint32_t base = first; base <= last; base++) {
        size_t i = 0;
        for (; i < n && engines_[i]->open(base + uint32_t(i), searching) == 0; i++) {
        }
        if (i == n) return true;
        for (size_t k = 0; k < i; k++)
            engines_[k]->close();  // retry from the next base
    }
    return false;
}

// Claim the endpoint's PIDs: one, or one per context pair of a scalable endpoint.
int Endpoint::open_pids() {
    if (engines_[0]->is_open()) return 0;
    if (claim_pids(requested_pid_)) return 0;
    if (pid_preferred_ && requested_pid_ != kPidAny) {
        // A second binder of the same port on this NIC (fabtests' -E client): its
        // address travels out of band, so any PID serves.
        SN_INFO(FI_LOG_EP_CTRL, "PID %u (from a port) is held; taking a free one\n",
                requested_pid_);
        if (claim_pids(kPidAny)) return 0;
    }
    size_t n = engines_.size();
    if (scalable_ && n > 1)
        SN_REJECT(-FI_EADDRINUSE, FI_LOG_EP_CTRL, "PID range for %zu contexts is in use\n", n);
    SN_REJECT(-FI_ENOSPC, FI_LOG_EP_CTRL, "PID %u is in use\n", requested_pid_);
}

// FI_AV_AUTH_KEY: the endpoint listens on the VNI of each key in the AV at enable
// (keys inserted later do not reach it, as fi_av(3) says) and holds them until it closes.
int Endpoint::take_av_auth_keys() {
    if (!domain_.av_auth_keys()) return 0;
    std::vector<uint8_t> raw;
    size_t n = av_->acquire_auth_keys(raw);
    holds_av_keys_ = true;
    if (n == 0) {
        release_av_auth_keys();
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "FI_AV_AUTH_KEY: the AV holds no auth key\n");
    }
    std::vector<uint16_t> vnis;
    for (size_t i = 0; i < n; i++) {
        cxi_auth_key k;
        std::memcpy(&k, raw.data() + i * sizeof(k), sizeof(k));
        vnis.push_back(k.vni);
    }
    for (auto &c : engines_)
        c->links().listen_on(vnis);
    return 0;
}

void Endpoint::release_av_auth_keys() {
    if (!holds_av_keys_) return;
    av_->release_auth_keys();
    holds_av_keys_ = false;
}

int Endpoint::enable(EpView &v) {
    if (!av_) SN_REJECT(-FI_ENOAV, FI_LOG_EP_CTRL, "no AV bound\n");
    if (!scalable_) {
        PidEngine &c = *engines_[0];
        if (!c.tx_bind().cq) SN_REJECT(-FI_ENOCQ, FI_LOG_EP_CTRL, "no transmit CQ bound\n");
        if ((caps_ & FI_RECV || !(caps_ & (FI_SEND | FI_RECV))) && !c.rx_bind().cq)
            SN_REJECT(-FI_ENOCQ, FI_LOG_EP_CTRL, "no receive CQ bound\n");
    }
    if (v.engine && scalable_) {
        if ((v.side & kTx) && !v.engine->tx_bind().cq)
            SN_REJECT(-FI_ENOCQ, FI_LOG_EP_CTRL, "no CQ bound to the TX context\n");
        if ((v.side & kRx) && !v.engine->rx_bind().cq)
            SN_REJECT(-FI_ENOCQ, FI_LOG_EP_CTRL, "no CQ bound to the RX context\n");
    }
    if (scalable_ && (caps_ & (FI_MSG | FI_TAGGED)) && (caps_ & FI_DIRECTED_RECV) &&
        !av_->symmetric())
        SN_REJECT(-FI_ENOPROTOOPT, FI_LOG_EP_CTRL,
                  "a scalable endpoint with FI_DIRECTED_RECV needs an FI_SYMMETRIC AV\n");
    if (!enabled_) {  // contexts may have been created unbound; bindings are kept
        if (int ret = take_av_auth_keys()) return ret;
        // The AV before the PIDs: once open, an engine's first packet may arrive.
        for (auto &c : engines_)
            c->set_av(av_);
        int ret = open_pids();
        if (ret) {
            release_av_auth_keys();
            return ret;
        }
        enabled_ = true;
    }
    for (auto &c : engines_) {
        // Under the engine's lock: the offload helper may be progressing it already.
        c->locked([&] { c->set_av(av_); });
        attach_progress(*c);
    }
    if (v.engine) {
        EpView *target = &v;
        const bool serial = v.engine->serial();
        target->h.fid.msg = serial ? &msg_serial_ops : &msg_ops;
        target->h.fid.tagged = serial ? &tagged_serial_ops : &tagged_ops;
        target->h.fid.rma = &rma_ops;
        target->h.fid.atomic = &atomic_ops;
    }
    return 0;
}

int Endpoint::control(EpView &v, int command, void *arg) {
    switch (command) {
        case FI_ENABLE:
            return enable(v);
        case FI_GETOPSFLAG:
        case FI_SETOPSFLAG: {
            if (!arg) SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "NULL flags\n");
            uint64_t &f = *static_cast<uint64_t *>(arg);
            bool tx = f & FI_TRANSMIT, rx = f & FI_RECV;
            if (tx == rx) SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "set exactly one of TX/RX\n");
            uint64_t &target = tx ? v.tx_flags : v.rx_flags;
            if (command == FI_GETOPSFLAG) {
                f = target | (tx ? FI_TRANSMIT : FI_RECV);
                return 0;
            }
            target = f & ~(FI_TRANSMIT | FI_RECV);
            if (tx && !(target & kCompletionLevels)) target |= FI_TRANSMIT_COMPLETE;
            return 0;
        }
        case FI_ALIAS: {
            auto *alias = static_cast<struct fi_alias *>(arg);
            if (!alias || !alias->fid) SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "NULL alias\n");
            bool tx = alias->flags & FI_TRANSMIT, rx = alias->flags & FI_RECV;
            if (alias->flags & ~(FI_TRANSMIT | FI_RECV | kTxOpFlags | kRxOpFlags | FI_TRIGGER) ||
                tx == rx)
                SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "bad alias flags\n");
            EpView *a = make_view(v.engine, v.side, v.h.fid.fid.context, v.h.fid.fid.fclass);
            a->is_alias = true;
            a->tx_flags = v.tx_flags;
            a->rx_flags = v.rx_flags;
            a->tclass = v.tclass;
            a->msg_order = v.msg_order;
            uint64_t &t = tx ? a->tx_flags : a->rx_flags;
            t = alias->flags & ~(FI_TRANSMIT | FI_RECV);
            a->h.fid.msg = v.h.fid.msg;
            a->h.fid.tagged = v.h.fid.tagged;
            a->h.fid.rma = v.h.fid.rma;
            a->h.fid.atomic = v.h.fid.atomic;
            *alias->fid = &a->h.fid.fid;
            return 0;
        }
        case FI_SET_VAL: {
            auto *var = static_cast<fi_fid_var *>(arg);
            if (!var) SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "NULL fi_fid_var\n");
            return set_var(v, var->name, var->val);
        }
        default:
            SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "unsupported endpoint control %d\n", command);
    }
}

int Endpoint::set_var(EpView &v, int name, const void *val) {
    if (!val) SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "NULL option value\n");
    switch (name) {
        case FI_OPT_CXI_SET_TCLASS: {
            uint32_t tc = *static_cast<const uint32_t *>(val);
            if (!tclass_valid(tc)) SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "bad tclass 0x%x\n", tc);
            v.tclass = tc == FI_TC_UNSPEC ? uint32_t(FI_TC_BEST_EFFORT) : tc;
            return 0;
        }
        case FI_OPT_CXI_SET_MSG_ORDER: {
            uint64_t order = *static_cast<const uint64_t *>(val);
            const uint64_t offered = rnr_ ? kRnrMsgOrder : kMsgOrder;
            if (order & ~offered)
                SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "unsupported order bits 0x%lx\n",
                          order & ~offered);
            v.msg_order = order;
            return 0;
        }
        case FI_OPT_CXI_SET_RNR_MAX_RETRY_TIME: {
            if (!rnr_) SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "not an FI_PROTO_CXI_RNR endpoint\n");
            uint64_t us = *static_cast<const uint64_t *>(val);
            for (auto &c : engines_)
                if (!v.engine || v.engine == c.get()) c->set_rnr(us);
            return 0;
        }
        default:
            SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "unknown variable %d\n", name);
    }
}

int Endpoint::getopt(EpView &v, int level, int name, void *val, size_t *len) {
    if (!val || !len) SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "NULL option buffer\n");
    if (level != FI_OPT_ENDPOINT)
        SN_REJECT(-FI_ENOPROTOOPT, FI_LOG_EP_CTRL, "unknown option level %d\n", level);
    if (name == FI_OPT_CXI_GET_RNR_APPEND_RETRY_ATTEMPTS) {
        if (*len < sizeof(uint64_t))
            SN_REJECT(-FI_ETOOSMALL, FI_LOG_EP_CTRL, "option buffer too small\n");
        if (!rnr_) SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "not an FI_PROTO_CXI_RNR endpoint\n");
        *static_cast<uint64_t *>(val) = 0;  // appending a receive never fails in software
        *len = sizeof(uint64_t);
        return 0;
    }
    if (name != FI_OPT_MIN_MULTI_RECV)
        SN_REJECT(-FI_ENOPROTOOPT, FI_LOG_EP_CTRL, "unknown option %d\n", name);
    if (*len < sizeof(size_t))
        SN_REJECT(-FI_ETOOSMALL, FI_LOG_EP_CTRL, "option buffer too small\n");
    PidEngine *c = v.engine ? v.engine : engines_[0].get();
    *static_cast<size_t *>(val) = c->rx().min_multi_recv();
    *len = sizeof(size_t);
    return 0;
}

int Endpoint::setopt(EpView &v, int level, int name, const void *val, size_t len) {
    if (!val) SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "NULL option value\n");
    if (level != FI_OPT_ENDPOINT)
        SN_REJECT(-FI_ENOPROTOOPT, FI_LOG_EP_CTRL, "unknown option level %d\n", level);
    switch (name) {
        case FI_OPT_CXI_SET_TCLASS:
        case FI_OPT_CXI_SET_MSG_ORDER:
        case FI_OPT_CXI_SET_RNR_MAX_RETRY_TIME: {
            size_t need = name == FI_OPT_CXI_SET_TCLASS ? sizeof(uint32_t) : sizeof(uint64_t);
            if (len < need) SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "option value too small\n");
            return set_var(v, name, val);
        }
        case FI_OPT_MIN_MULTI_RECV:
            break;
        default:
            SN_REJECT(-FI_ENOPROTOOPT, FI_LOG_EP_CTRL, "unknown option %d\n", name);
    }
    if (len < sizeof(size_t)) SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "option value too small\n");
    size_t m = *static_cast<const size_t *>(val);
    if (m > kMinMultiRecvMax) SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "min_multi_recv too large\n");
    if (v.engine)
        v.engine->rx().min_multi_recv() = m;
    else
        for (auto &c : engines_)
            c->rx().min_multi_recv() = m;
    return 0;
}

int Endpoint::getname(EpView &v, void *addr, size_t *len) {
    if (!len) SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "NULL addrlen\n");
    if (!enabled_) SN_REJECT(-FI_EOPBADSTATE, FI_LOG_EP_CTRL, "endpoint is not enabled\n");
    PidEngine *c = v.engine ? v.engine : engines_[0].get();
    CxiAddr a = make_addr(domain_.nic().addr, c->pid());
    size_t need = addr_len(domain_.api_version());
    size_t n = std::min(*len, need);
    if (addr && n) std::memcpy(addr, &a, n);
    bool short_buf = *len < need;
    *len = need;
    if (short_buf) return -FI_ETOOSMALL;
    return 0;
}

}  // namespace softnic::cxi
