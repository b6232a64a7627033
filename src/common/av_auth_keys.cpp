// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// FI_AV_AUTH_KEY: the AV's table of authorization keys (fi_av_insert_auth_key), the
// handles that name them, and the user ids (fi_av_set_user_id) of keys and addresses.
#include <cstring>

#include "common/av.hpp"
#include "common/fi_api.hpp"
#include "common/log.hpp"

namespace softnic {

int Av::insert_auth_key(const void *key, size_t size, fi_addr_t *fi_addr, uint64_t flags) {
    if (!auth_key_mode())
        SN_REJECT(-FI_EINVAL, FI_LOG_AV, "the domain was not opened with FI_AV_AUTH_KEY\n");
    if (!key || !fi_addr) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "NULL auth_key or fi_addr\n");
    if (size != auth_policy_.key_size)
        SN_REJECT(-FI_EINVAL, FI_LOG_AV, "auth_key_size %zu, expected %zu\n", size,
                  auth_policy_.key_size);
    if (flags) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "flags must be 0\n");
    std::vector<uint8_t> canon(static_cast<const uint8_t *>(key),
                               static_cast<const uint8_t *>(key) + size);
    if (int ret = auth_policy_.check(canon.data())) return ret;
    std::lock_guard<std::mutex> g(lock_);
    const uint8_t *bytes = canon.data();
    size_t free_slot = auth_keys_.size(), used = 0;
    for (size_t i = 0; i < auth_keys_.size(); i++) {
        if (auth_keys_[i].key.empty()) {
            free_slot = std::min(free_slot, i);
            continue;
        }
        used++;
        if (std::memcmp(auth_keys_[i].key.data(), bytes, size) == 0) {
            *fi_addr = i;  // the same key again: the same handle
            return 0;
        }
    }
    if (used >= auth_policy_.max_keys)
        SN_REJECT(-FI_ENOSPC, FI_LOG_AV, "the AV holds its maximum of %zu keys (max_ep_auth_key)\n",
                  auth_policy_.max_keys);
    if (free_slot == auth_keys_.size()) auth_keys_.emplace_back();
    auth_keys_[free_slot].key.assign(bytes, bytes + size);
    auth_keys_[free_slot].user_id = FI_ADDR_NOTAVAIL;
    *fi_addr = free_slot;
    return 0;
}

int Av::lookup_auth_key(fi_addr_t handle, void *key, size_t *size) {
    if (!auth_key_mode())
        SN_REJECT(-FI_EINVAL, FI_LOG_AV, "the domain was not opened with FI_AV_AUTH_KEY\n");
    if (!key || !size) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "NULL auth_key or auth_key_size\n");
    std::lock_guard<std::mutex> g(lock_);
    if (handle >= auth_keys_.size() || auth_keys_[handle].key.empty())
        SN_REJECT(-FI_EINVAL, FI_LOG_AV, "fi_addr %lu names no authorization key\n", handle);
    const std::vector<uint8_t> &k = auth_keys_[handle].key;
    size_t n = std::min(*size, k.size());
    std::memcpy(key, k.data(), n);
    *size = k.size();
    return n < k.size() ? -FI_ETOOSMALL : 0;
}

int Av::remove_auth_keys(const fi_addr_t *handles, size_t count) {
    std::lock_guard<std::mutex> g(lock_);
    for (size_t n = 0; n < count; n++)
        if (handles[n] >= auth_keys_.size() || auth_keys_[handles[n]].key.empty())
            SN_REJECT(-FI_EINVAL, FI_LOG_AV, "fi_addr %lu names no authorization key\n",
                      handles[n]);
    if (auth_key_holders_)
        SN_REJECT(-FI_EBUSY, FI_LOG_AV, "endpoints enabled with the keys are still open\n");
    for (size_t n = 0; n < count; n++)
        auth_keys_[handles[n]] = AuthKeySlot{};
    return 0;
}

bool Av::under_auth_key(fi_addr_t handle, uint8_t *addr) const {
    if (handle >= auth_keys_.size() || auth_keys_[handle].key.empty()) {
        SN_WARN(FI_LOG_AV, "fi_addr %lu names no authorization key\n", handle);
        return false;
    }
    auth_policy_.apply(addr, auth_keys_[handle].key.data());
    return true;
}

size_t Av::acquire_auth_keys(std::vector<uint8_t> &out) {
    std::lock_guard<std::mutex> g(lock_);
    size_t n = 0;
    for (const AuthKeySlot &s : auth_keys_) {
        if (s.key.empty()) continue;
        out.insert(out.end(), s.key.begin(), s.key.end());
        n++;
    }
    auth_key_holders_++;
    return n;
}

void Av::release_auth_keys() {
    std::lock_guard<std::mutex> g(lock_);
    if (auth_key_holders_) auth_key_holders_--;
}

int Av::set_user_id(fi_addr_t fi_addr, fi_addr_t user_id, uint64_t flags) {
    if (flags & ~kAuthKeyFlag) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "flags must be 0 or FI_AUTH_KEY\n");
    std::lock_guard<std::mutex> g(lock_);
    if (flags & kAuthKeyFlag) {
        if (fi_addr >= auth_keys_.size() || auth_keys_[fi_addr].key.empty())
            SN_REJECT(-FI_EINVAL, FI_LOG_AV, "fi_addr %lu names no authorization key\n", fi_addr);
        auth_keys_[fi_addr].user_id = user_id;
        return 0;
    }
    if (!(flags_ & FI_AV_USER_ID))
        SN_REJECT(-FI_EINVAL, FI_LOG_AV, "the AV was not opened with FI_AV_USER_ID\n");
    size_t i = base_index(fi_addr);
    if (fi_addr == FI_ADDR_UNSPEC || i >= next_ || !slot(i).refs)
        SN_REJECT(-FI_EINVAL, FI_LOG_AV, "fi_addr %lu is not in the AV\n", fi_addr);
    slot(i).user_id = user_id;
    generation_.fetch_add(1, std::memory_order_release);
    return 0;
}

}  // namespace softnic
