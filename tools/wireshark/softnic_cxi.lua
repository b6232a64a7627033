-- SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
-- softnic_cxi.lua - Wireshark dissector for softnic's cxi provider over UDP.
--
-- Load:  wireshark -X lua_script:tools/wireshark/softnic_cxi.lua
--        tshark    -X lua_script:tools/wireshark/softnic_cxi.lua -r capture.pcap -V
-- or copy this file to ~/.local/lib/wireshark/plugins/ (see README.md).
--
-- Every datagram starts with the 40-byte reliability header ("softnic" protocol);
-- a DATA datagram then carries one cxi packet: a 72-byte header and its payload
-- ("softnic_cxi" protocol), or for a collective's COLL_SMALL packet a 40-byte one (the
-- same first 16 bytes, then the group key, the call's shape, the call's number and the
-- sender's rank), or for a one-packet message (SMALL) a 24-byte one (the first 16 bytes,
-- then the tag; 8 more for the CQ data when its flag is set). All integers are
-- little-endian.
--
-- An endpoint's UDP port is base + (VNI % 16) * 512 + PID, base = 20480 by default,
-- so the dissector owns ports base .. base + 8191. A heuristic on the magic keeps other
-- UDP traffic on those ports from being mis-decoded; a stricter heuristic finds softnic
-- traffic on any other UDP port.

local REL_HDR_LEN   = 40
local CXI_HDR_LEN   = 72
local COLL_HDR_LEN  = 40
local SMALL_HDR_LEN = 24
local MAGIC         = 0x4e53     -- bytes 'S' 'N'
local PORT_SPAN     = 16 * 512   -- 16 VNI slots of 512 PIDs
local DEFAULT_BASE  = 20480

local bitlib = bit or bit32
local band = bitlib.band

----------------------------------------------------------------------------------------
-- Names

local rel_types = { [1] = "DATA", [2] = "ACK", [3] = "PROBE", [4] = "REJECT" }
local cxi_types = { [1] = "MSG", [2] = "DATA", [3] = "GET_REQ", [4] = "DONE",
                    [5] = "RMA_WRITE", [6] = "RMA_READ_REQ", [7] = "RMA_READ_RESP",
                    [8] = "ATOMIC", [9] = "ATOMIC_RESP", [10] = "COLL", [11] = "SMALL",
                    [12] = "COLL_SMALL" }

local REL_DATA, REL_ACK, REL_PROBE = 1, 2, 3
local CXI_MSG, CXI_DATA, CXI_GET_REQ, CXI_DONE, CXI_SMALL, CXI_COLL_SMALL = 1, 2, 3, 4, 11, 12

local REL_F_ACK_VALID = 0x0001
local REL_F_CONGESTED = 0x0002
local REL_F_DUPLICATE = 0x0004
local REL_F_ACK_NOW   = 0x0008

local CXI_F_TAGGED  = 0x0001
local CXI_F_CQ_DATA = 0x0002
local CXI_F_ACK_REQ = 0x0004
local CXI_F_RDZV    = 0x0008
local CXI_F_WHOLE   = 0x0010
local CXI_F_PULLED  = 0x0020
local CXI_F_TRUNC   = 0x0040
local CXI_F_ERROR   = 0x0080

local cxi_flag_names = {
    { CXI_F_TAGGED, "TAGGED" }, { CXI_F_CQ_DATA, "CQ_DATA" }, { CXI_F_ACK_REQ, "ACK_REQ" },
    { CXI_F_RDZV, "RDZV" }, { CXI_F_WHOLE, "WHOLE" }, { CXI_F_PULLED, "PULLED" },
    { CXI_F_TRUNC, "TRUNC" }, { CXI_F_ERROR, "ERROR" },
}

----------------------------------------------------------------------------------------
-- Protocols and fields

local p_rel = Proto("softnic", "softnic reliability header")
local p_cxi = Proto("softnic_cxi", "softnic CXI packet")

local rf = {
    magic       = ProtoField.uint16("softnic.magic", "Magic", base.HEX),
    version     = ProtoField.uint8("softnic.version", "Version", base.DEC),
    type        = ProtoField.uint8("softnic.type", "Type", base.DEC, rel_types),
    flags       = ProtoField.uint16("softnic.flags", "Flags", base.HEX),
    f_ack_valid = ProtoField.bool("softnic.flags.ack_valid", "ACK_VALID", 16,
                                  { "ack fields valid", "ack fields not valid" }, REL_F_ACK_VALID),
    f_congested = ProtoField.bool("softnic.flags.congested", "CONGESTED (sender's receive queue ran deep)",
                                  16, nil, REL_F_CONGESTED),
    f_duplicate = ProtoField.bool("softnic.flags.duplicate", "DUPLICATE (sender received duplicates)",
                                  16, nil, REL_F_DUPLICATE),
    f_ack_now   = ProtoField.bool("softnic.flags.ack_now", "ACK_NOW (acknowledge at once)", 16, nil,
                                  REL_F_ACK_NOW),
    f_reserved  = ProtoField.uint16("softnic.flags.reserved", "Reserved flag bits", base.HEX,
                                    nil, 0xfff0),
    reserved1   = ProtoField.uint16("softnic.reserved1", "Reserved", base.HEX),
    epoch       = ProtoField.uint32("softnic.epoch", "Epoch", base.HEX),
    seq         = ProtoField.uint32("softnic.seq", "Sequence", base.DEC),
    ack_epoch   = ProtoField.uint32("softnic.ack_epoch", "Ack epoch", base.HEX),
    ack         = ProtoField.uint32("softnic.ack", "Ack (next expected)", base.DEC),
    window      = ProtoField.uint32("softnic.window", "Window (send below)", base.DEC),
    realm       = ProtoField.uint32("softnic.realm", "Realm (VNI)", base.DEC),
    sack        = ProtoField.uint64("softnic.sack", "SACK bitmap", base.HEX),
    sack_seq    = ProtoField.uint32("softnic.sack.seq", "SACKed sequence", base.DEC),
    src_vni16   = ProtoField.uint16("softnic.port.src_vni16", "Source port VNI % 16", base.DEC),
    src_pid     = ProtoField.uint16("softnic.port.src_pid", "Source port PID", base.DEC),
    dst_vni16   = ProtoField.uint16("softnic.port.dst_vni16", "Destination port VNI % 16", base.DEC),
    dst_pid     = ProtoField.uint16("softnic.port.dst_pid", "Destination port PID", base.DEC),
}
p_rel.fields = {
    rf.magic, rf.version, rf.type, rf.flags, rf.f_ack_valid, rf.f_congested, rf.f_duplicate,
    rf.f_ack_now, rf.f_reserved, rf.reserved1,
    rf.epoch, rf.seq, rf.ack_epoch, rf.ack, rf.window, rf.realm, rf.sack, rf.sack_seq,
    rf.src_vni16, rf.src_pid, rf.dst_vni16, rf.dst_pid,
}

local cf = {
    type        = ProtoField.uint8("softnic_cxi.type", "Type", base.DEC, cxi_types),
    version     = ProtoField.uint8("softnic_cxi.version", "Version", base.DEC),
    flags       = ProtoField.uint16("softnic_cxi.flags", "Flags", base.HEX),
    f_tagged    = ProtoField.bool("softnic_cxi.flags.tagged", "TAGGED", 16, nil, CXI_F_TAGGED),
    f_cq_data   = ProtoField.bool("softnic_cxi.flags.cq_data", "CQ_DATA", 16, nil, CXI_F_CQ_DATA),
    f_ack_req   = ProtoField.bool("softnic_cxi.flags.ack_req", "ACK_REQ (sender waits for DONE)",
                                  16, nil, CXI_F_ACK_REQ),
    f_rdzv      = ProtoField.bool("softnic_cxi.flags.rdzv", "RDZV (bytes past eager_len are pulled)",
                                  16, nil, CXI_F_RDZV),
    f_whole     = ProtoField.bool("softnic_cxi.flags.whole", "WHOLE (eager rendezvous)",
                                  16, nil, CXI_F_WHOLE),
    f_pulled    = ProtoField.bool("softnic_cxi.flags.pulled", "PULLED (answers GET_REQ)",
                                  16, nil, CXI_F_PULLED),
    f_trunc     = ProtoField.bool("softnic_cxi.flags.trunc", "TRUNC (receiver truncated)",
                                  16, nil, CXI_F_TRUNC),
    f_error     = ProtoField.bool("softnic_cxi.flags.error", "ERROR (receiver could not take it)",
                                  16, nil, CXI_F_ERROR),
    f_reserved  = ProtoField.uint16("softnic_cxi.flags.reserved", "Reserved flag bits", base.HEX,
                                    nil, 0xff00),
    vni         = ProtoField.uint16("softnic_cxi.vni", "VNI", base.DEC),
    src_pid     = ProtoField.uint16("softnic_cxi.src_pid", "Source PID", base.DEC),
    src_nic     = ProtoField.uint32("softnic_cxi.src_nic", "Source NIC", base.HEX),
    src         = ProtoField.string("softnic_cxi.src", "Source (NIC:PID)"),
    payload_len = ProtoField.uint32("softnic_cxi.payload_len", "Payload length", base.DEC),
    msg_len     = ProtoField.uint64("softnic_cxi.msg_len", "Message length", base.DEC),
    eager_len   = ProtoField.uint64("softnic_cxi.eager_len", "Eager length", base.DEC),
    tag         = ProtoField.uint64("softnic_cxi.tag", "Tag", base.HEX),
    cq_data     = ProtoField.uint64("softnic_cxi.cq_data", "CQ data", base.HEX),
    cookie      = ProtoField.uint64("softnic_cxi.cookie", "Cookie (sender's operation id)", base.HEX),
    offset      = ProtoField.uint64("softnic_cxi.offset", "Offset", base.DEC),
    rdzv_addr   = ProtoField.uint64("softnic_cxi.rdzv_addr", "Rendezvous address", base.HEX),
    coll_key    = ProtoField.uint64("softnic_cxi.coll.key", "Group key", base.HEX),
    coll_shape  = ProtoField.uint64("softnic_cxi.coll.shape", "Call shape and flags", base.HEX),
    coll_seq    = ProtoField.uint32("softnic_cxi.coll.seq", "Call number", base.DEC),
    coll_rank   = ProtoField.uint32("softnic_cxi.coll.rank", "Sender's rank", base.DEC),
}
p_cxi.fields = {
    cf.type, cf.version, cf.flags, cf.f_tagged, cf.f_cq_data, cf.f_ack_req, cf.f_rdzv,
    cf.f_whole, cf.f_pulled, cf.f_trunc, cf.f_error, cf.f_reserved, cf.vni, cf.src_pid,
    cf.src_nic, cf.src, cf.payload_len, cf.msg_len, cf.eager_len, cf.tag, cf.cq_data,
    cf.cookie, cf.offset, cf.rdzv_addr, cf.coll_key, cf.coll_shape, cf.coll_seq, cf.coll_rank,
}

local ef = {
    malformed = ProtoExpert.new("softnic.malformed", "Malformed softnic packet",
                                expert.group.MALFORMED, expert.severity.ERROR),
    version   = ProtoExpert.new("softnic.bad_version", "Unexpected softnic wire version",
                                expert.group.PROTOCOL, expert.severity.WARN),
    trailing  = ProtoExpert.new("softnic.trailing", "Unexpected trailing bytes",
                                expert.group.PROTOCOL, expert.severity.WARN),
    mismatch  = ProtoExpert.new("softnic.port_mismatch", "Header disagrees with UDP port",
                                expert.group.PROTOCOL, expert.severity.WARN),
}
p_rel.experts = { ef.malformed, ef.version, ef.trailing, ef.mismatch }

p_rel.prefs.port_base = Pref.uint("UDP port base", DEFAULT_BASE,
    "An endpoint's UDP port is base + (VNI % 16) * 512 + PID; the dissector owns " ..
    "ports base .. base + 8191")

----------------------------------------------------------------------------------------
-- Helpers

local data_dissector = Dissector.get("data")

-- "0x5" rather than "0x0000000000000005".
local function hex64(u)
    local s = u:tohex():gsub("^0+", "")
    if s == "" then s = "0" end
    return "0x" .. s
end

local function port_base()
    local b = p_rel.prefs.port_base
    if type(b) ~= "number" or b < 0 or b > 65535 then b = DEFAULT_BASE end
    return b
end

-- PID and VNI % 16 encoded in a UDP port, or nil when the port is not ours.
local function split_port(port)
    local b = port_base()
    if port == nil or port < b or port >= b + PORT_SPAN then return nil end
    local rel = port - b
    return math.floor(rel / 512), rel % 512
end

local function malformed(item, text)
    item:add_proto_expert_info(ef.malformed, text)
end

----------------------------------------------------------------------------------------
-- cxi packet (inside a DATA datagram)

-- Returns the text the Info column gets for this packet.
local function dissect_cxi(tvb, pinfo, tree, root)
    local len = tvb:len()
    local compact = len >= 1 and tvb(0, 1):uint() == CXI_COLL_SMALL
    local small = len >= 1 and tvb(0, 1):uint() == CXI_SMALL
    local hdr_len = compact and COLL_HDR_LEN or CXI_HDR_LEN
    if small then
        hdr_len = SMALL_HDR_LEN
        if len >= 4 and band(tvb(2, 2):le_uint(), CXI_F_CQ_DATA) ~= 0 then hdr_len = hdr_len + 8 end
    end
    local t = tree:add(p_cxi, tvb(0, math.min(len, hdr_len)))

    if len < hdr_len then
        -- Decode what is there, field by field.
        local function part(field, off, size)
            if off + size <= len then t:add_le(field, tvb(off, size)) end
        end
        part(cf.type, 0, 1); part(cf.version, 1, 1); part(cf.flags, 2, 2)
        part(cf.vni, 4, 2); part(cf.src_pid, 6, 2); part(cf.src_nic, 8, 4)
        part(cf.payload_len, 12, 4)
        if compact then
            part(cf.coll_key, 16, 8); part(cf.coll_shape, 24, 8); part(cf.coll_seq, 32, 4)
        elseif small then
            part(cf.tag, 16, 8); part(cf.cq_data, 24, 8)
        else
            part(cf.msg_len, 16, 8); part(cf.eager_len, 24, 8)
            part(cf.tag, 32, 8); part(cf.cq_data, 40, 8); part(cf.cookie, 48, 8)
            part(cf.offset, 56, 8)
        end
        t:append_text(string.format(" [truncated: %d of %d header bytes]", len, hdr_len))
        malformed(t, string.format("Truncated cxi header: %d of %d bytes", len, hdr_len))
        local ty = len >= 1 and (cxi_types[tvb(0, 1):uint()] or ("type=" .. tvb(0, 1):uint())) or "?"
        return ty .. " [malformed]"
    end

    local ptype   = tvb(0, 1):uint()
    local version = tvb(1, 1):uint()
    local flags   = tvb(2, 2):le_uint()
    local vni     = tvb(4, 2):le_uint()
    local pid     = tvb(6, 2):le_uint()
    local nic     = tvb(8, 4):le_uint()
    local plen    = tvb(12, 4):le_uint()
    local msg_len, tag, cookie, offset
    if small then
        msg_len = plen
        tag     = tvb(16, 8):le_uint64()
    elseif not compact then
        msg_len = tvb(16, 8):le_uint64()
        tag     = tvb(32, 8):le_uint64()
        cookie  = tvb(48, 8):le_uint64()
        offset  = tvb(56, 8):le_uint64()
    end
    local tname   = cxi_types[ptype]
    local src     = string.format("0x%x:%d", nic, pid)

    t:append_text(string.format(", %s, src %s", tname or ("type " .. ptype), src))

    local ti = t:add(cf.type, tvb(0, 1))
    if not tname then malformed(ti, "Unknown cxi packet type " .. ptype) end
    local vi = t:add(cf.version, tvb(1, 1))
    if version ~= 1 then vi:add_proto_expert_info(ef.version, "cxi version " .. version .. ", expected 1") end

    local fi = t:add_le(cf.flags, tvb(2, 2))
    local names = {}
    for _, fl in ipairs(cxi_flag_names) do
        if band(flags, fl[1]) ~= 0 then names[#names + 1] = fl[2] end
    end
    if #names > 0 then fi:append_text(" (" .. table.concat(names, ", ") .. ")") end
    for _, f in ipairs({ cf.f_tagged, cf.f_cq_data, cf.f_ack_req, cf.f_rdzv, cf.f_whole,
                         cf.f_pulled, cf.f_trunc, cf.f_error, cf.f_reserved }) do
        fi:add_le(f, tvb(2, 2))
    end

    t:add_le(cf.vni, tvb(4, 2))
    t:add_le(cf.src_pid, tvb(6, 2))
    local ni = t:add_le(cf.src_nic, tvb(8, 4))
    if nic > 0xfffff then ni:append_text(" [exceeds 20 bits]") end
    t:add(cf.src, tvb(4, 8), src):set_generated()

    -- The source port encodes the sender's VNI % 16 and PID.
    local pvni, ppid = split_port(pinfo.src_port)
    if pvni ~= nil and (pvni ~= vni % 16 or ppid ~= pid) then
        t:add_proto_expert_info(ef.mismatch, string.format(
            "UDP source port %d means VNI%%16=%d PID=%d, header says VNI=%d PID=%d",
            pinfo.src_port, pvni, ppid, vni, pid))
    end

    t:add_le(cf.payload_len, tvb(12, 4))
    if compact then
        t:add_le(cf.coll_key, tvb(16, 8))
        t:add_le(cf.coll_shape, tvb(24, 8))
        t:add_le(cf.coll_seq, tvb(32, 4))
        t:add_le(cf.coll_rank, tvb(36, 4))
    elseif small then
        t:add_le(cf.tag, tvb(16, 8))
        if hdr_len > SMALL_HDR_LEN then t:add_le(cf.cq_data, tvb(24, 8)) end
    else
        t:add_le(cf.msg_len, tvb(16, 8))
        t:add_le(cf.eager_len, tvb(24, 8))
        t:add_le(cf.tag, tvb(32, 8))
        t:add_le(cf.cq_data, tvb(40, 8))
        t:add_le(cf.cookie, tvb(48, 8))
        t:add_le(cf.offset, tvb(56, 8))
        t:add_le(cf.rdzv_addr, tvb(64, 8))
    end

    -- Payload.
    local avail = len - hdr_len
    local suffix = ""
    if plen > avail then
        malformed(t, string.format("Payload length %d, only %d bytes present", plen, avail))
        suffix = " [malformed]"
    elseif plen < avail then
        t:add_proto_expert_info(ef.trailing,
            string.format("%d bytes after the %d-byte payload", avail - plen, plen))
    end
    local shown = math.min(plen, avail)
    if shown > 0 then
        data_dissector:call(tvb(hdr_len, shown):tvb(), pinfo, root)
    end
    if avail > plen then
        data_dissector:call(tvb(hdr_len + plen, avail - plen):tvb(), pinfo, root)
    end

    -- Info column.
    local info = tname or ("type=" .. ptype)
    if ptype == CXI_MSG or ptype == CXI_SMALL then
        if band(flags, CXI_F_TAGGED) ~= 0 then info = info .. " tag=" .. hex64(tag) end
        info = info .. " len=" .. tostring(msg_len)
        if band(flags, CXI_F_RDZV) ~= 0 then info = info .. " RDZV" end
    elseif ptype == CXI_DATA then
        info = info .. " off=" .. tostring(offset) .. " len=" .. plen
        if band(flags, CXI_F_PULLED) ~= 0 then info = info .. " PULLED" end
    elseif ptype == CXI_GET_REQ then
        info = info .. " off=" .. tostring(offset) .. " cookie=" .. hex64(cookie)
    elseif ptype == CXI_COLL_SMALL then
        info = info .. " key=" .. hex64(tvb(16, 8):le_uint64()) ..
            string.format(" call=%d rank=%d len=%d", tvb(32, 4):le_uint(), tvb(36, 4):le_uint(), plen)
    elseif ptype == CXI_DONE then
        info = info .. " cookie=" .. hex64(cookie)
        if band(flags, CXI_F_TRUNC) ~= 0 then info = info .. " TRUNC" end
        if band(flags, CXI_F_ERROR) ~= 0 then info = info .. " ERROR" end
    end
    return info .. suffix
end

----------------------------------------------------------------------------------------
-- Reliability header

local function add_port_info(t, pinfo)
    local v, p = split_port(pinfo.src_port)
    if v ~= nil then
        t:add(rf.src_vni16, v):set_generated()
        t:add(rf.src_pid, p):set_generated()
    end
    v, p = split_port(pinfo.dst_port)
    if v ~= nil then
        t:add(rf.dst_vni16, v):set_generated()
        t:add(rf.dst_pid, p):set_generated()
    end
end

local function dissect_body(tvb, pinfo, tree)
    local len = tvb:len()
    local t = tree:add(p_rel, tvb(0, math.min(len, REL_HDR_LEN)))

    if len < REL_HDR_LEN then
        local function part(field, off, size)
            if off + size <= len then t:add_le(field, tvb(off, size)) end
        end
        part(rf.magic, 0, 2); part(rf.version, 2, 1); part(rf.type, 3, 1)
        part(rf.flags, 4, 2); part(rf.reserved1, 6, 2); part(rf.epoch, 8, 4)
        part(rf.seq, 12, 4); part(rf.ack_epoch, 16, 4); part(rf.ack, 20, 4)
        part(rf.window, 24, 4); part(rf.realm, 28, 4)
        t:append_text(string.format(" [truncated: %d of %d bytes]", len, REL_HDR_LEN))
        malformed(t, string.format("Truncated reliability header: %d of %d bytes", len, REL_HDR_LEN))
        local ty = len >= 4 and (rel_types[tvb(3, 1):uint()] or ("type=" .. tvb(3, 1):uint())) or "?"
        pinfo.cols.info:set(ty .. " [malformed: " .. len .. " bytes]")
        return
    end

    local version = tvb(2, 1):uint()
    local rtype   = tvb(3, 1):uint()
    local flags   = tvb(4, 2):le_uint()
    local seq     = tvb(12, 4):le_uint()
    local ack     = tvb(20, 4):le_uint()
    local window  = tvb(24, 4):le_uint()
    local sack    = tvb(32, 8):le_uint64()
    local ack_ok  = band(flags, REL_F_ACK_VALID) ~= 0
    local tname   = rel_types[rtype]

    t:append_text(", " .. (tname or ("type " .. rtype)))
    if rtype == REL_DATA then t:append_text(", seq " .. seq) end
    if ack_ok then t:append_text(", ack " .. ack) end

    t:add_le(rf.magic, tvb(0, 2))
    local vi = t:add(rf.version, tvb(2, 1))
    if version ~= 1 then vi:add_proto_expert_info(ef.version, "version " .. version .. ", expected 1") end
    local ti = t:add(rf.type, tvb(3, 1))
    if not tname then malformed(ti, "Unknown reliability packet type " .. rtype) end

    local fi = t:add_le(rf.flags, tvb(4, 2))
    if ack_ok then fi:append_text(" (ACK_VALID)") end
    fi:add_le(rf.f_ack_valid, tvb(4, 2))
    fi:add_le(rf.f_congested, tvb(4, 2))
    fi:add_le(rf.f_duplicate, tvb(4, 2))
    fi:add_le(rf.f_ack_now, tvb(4, 2))
    fi:add_le(rf.f_reserved, tvb(4, 2))

    t:add_le(rf.reserved1, tvb(6, 2))
    t:add_le(rf.epoch, tvb(8, 4))
    local si = t:add_le(rf.seq, tvb(12, 4))
    if rtype ~= REL_DATA then si:append_text(" [unused: not DATA]") end

    local stale = ack_ok and "" or " [not valid: ACK_VALID clear]"
    t:add_le(rf.ack_epoch, tvb(16, 4)):append_text(stale)
    t:add_le(rf.ack, tvb(20, 4)):append_text(stale)
    t:add_le(rf.window, tvb(24, 4)):append_text(stale)
    t:add_le(rf.realm, tvb(28, 4))

    local ski = t:add_le(rf.sack, tvb(32, 8))
    ski:append_text(stale)
    -- Bit i set = sequence ack + 1 + i received.
    local words = { sack:lower(), sack:higher() }
    local acked = {}
    for w = 1, 2 do
        for i = 0, 31 do
            if band(words[w], 2 ^ i) ~= 0 then
                local s = (ack + 1 + (w - 1) * 32 + i) % 4294967296
                ski:add(rf.sack_seq, tvb(32, 8), s):set_generated()
                acked[#acked + 1] = s
            end
        end
    end
    if #acked > 0 and #acked <= 8 then
        ski:append_text(" (received " .. table.concat(acked, ", ") .. ")")
    elseif #acked > 8 then
        ski:append_text(" (" .. #acked .. " sequences received)")
    end

    add_port_info(t, pinfo)

    -- Info column.
    local info = tname or ("type=" .. rtype)
    local realm = tvb(28, 4):le_uint()
    if realm ~= 0 then info = info .. " realm=" .. realm end
    if rtype == REL_DATA then info = info .. " seq=" .. seq end
    if ack_ok then
        info = info .. " ack=" .. ack
        if rtype ~= REL_DATA then info = info .. " win=" .. window end
        if sack ~= UInt64(0) then info = info .. " sack=" .. hex64(sack) end
    end

    local rest = len - REL_HDR_LEN
    if rtype == REL_DATA then
        if rest == 0 then
            malformed(t, "DATA datagram without a cxi packet")
            info = info .. " [malformed: no cxi packet]"
        else
            info = info .. " " .. dissect_cxi(tvb(REL_HDR_LEN, rest):tvb(), pinfo, tree, tree)
        end
    elseif rest > 0 then
        t:add_proto_expert_info(ef.trailing,
            string.format("%d bytes after a header-only %s", rest, tname or "packet"))
        data_dissector:call(tvb(REL_HDR_LEN, rest):tvb(), pinfo, tree)
    end
    pinfo.cols.info:set(info)
end

----------------------------------------------------------------------------------------
-- Entry points

local function has_magic(tvb)
    return tvb:len() >= 2 and tvb(0, 2):le_uint() == MAGIC
end

local function dissect(tvb, pinfo, tree)
    pinfo.cols.protocol:set("softnic")
    pinfo.cols.info:clear()
    local ok, err = pcall(dissect_body, tvb, pinfo, tree)
    if not ok then
        -- Never let a bad packet raise a Lua error; flag it instead.
        local t = tree:add(p_rel, tvb())
        malformed(t, "Dissector error: " .. tostring(err))
        pinfo.cols.info:append(" [malformed]")
    end
    return tvb:len()
end

-- Port-registered dissector: the magic decides; otherwise the datagram is left to
-- other dissectors (returning 0 rejects it).
function p_rel.dissector(tvb, pinfo, tree)
    if not has_magic(tvb) then return 0 end
    return dissect(tvb, pinfo, tree)
end

-- Heuristic for UDP ports outside the range: magic, version, type and a full header.
local function heuristic(tvb, pinfo, tree)
    if tvb:len() < REL_HDR_LEN or not has_magic(tvb) then return false end
    if tvb(2, 1):uint() ~= 1 or rel_types[tvb(3, 1):uint()] == nil then return false end
    dissect(tvb, pinfo, tree)
    return true
end
p_rel:register_heuristic("udp", heuristic)

local udp_table = DissectorTable.get("udp.port")
local registered_base = nil

local function port_range(b)
    return string.format("%d-%d", b, math.min(b + PORT_SPAN - 1, 65535))
end

local function register_ports()
    local b = port_base()
    if registered_base == b then return end
    if registered_base ~= nil then udp_table:remove(port_range(registered_base), p_rel) end
    udp_table:add(port_range(b), p_rel)
    registered_base = b
end

function p_rel.prefs_changed()
    register_ports()
end

register_ports()
