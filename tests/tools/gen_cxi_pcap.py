#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""Write a pcap of crafted softnic cxi-over-UDP datagrams for the Wireshark dissector test.

Usage: gen_cxi_pcap.py OUT.pcap [--fuzz N]

Standard library only. The pcap file (Ethernet/IPv4/UDP framing) is assembled by hand.
Frames, in order (tests/tools/test_dissector.sh checks them by number):
  1  DATA seq=12 ack=7 + MSG, TAGGED|CQ_DATA|ACK_REQ, tag 0x5, 8-byte payload
  2  DATA seq=13 + DATA, PULLED, offset 4096, 16-byte payload
  3  ACK ack=20 win=276 sack=0x3
  4  PROBE (ACK_VALID clear)
  5  DATA seq=14 ack=21 + DONE, TRUNC, cookie 0xc0ffee
  6  DATA seq=15 + GET_REQ offset 65536, cookie 0xabc
  7  garbage on a softnic port (no magic): must not be decoded as softnic
  8  magic, then truncated reliability header (17 bytes): malformed
  9  DATA with a truncated cxi header (40 + 30 bytes): malformed
  10 DATA + MSG whose payload field says 100 bytes but 4 follow: malformed
  11 ACK on UDP port 9999 (outside the range): found by the heuristic
  12 header-only packet with unknown type 9 and version 2 on a softnic port
  13 DATA + MSG whose source PID (9) disagrees with the UDP source port (PID 5)
  14 DATA + COLL_SMALL (a collective contribution's 40-byte header): key 0x77, call 9,
     rank 2, 8-byte payload
  15 DATA + SMALL (a one-packet message's compact header with CQ data, 32 bytes): tag
     0x9, CQ data 0x1234, 8-byte payload
With --fuzz N, N more frames follow: seeded pseudo-random mutations of the frames above
(the magic kept, bytes flipped, lengths cut or padded) to check the dissector never
raises a Lua error.
"""

import random
import struct
import sys

PORT_BASE = 20480
REL_MAGIC = 0x4E53

REL_DATA, REL_ACK, REL_PROBE = 1, 2, 3
ACK_VALID = 0x1

MSG, DATA, GET_REQ, DONE, SMALL, COLL_SMALL = 1, 2, 3, 4, 11, 12
TAGGED, CQ_DATA, ACK_REQ, RDZV, WHOLE, PULLED, TRUNC, ERROR = (1 << i for i in range(8))


def port(vni, pid):
    return PORT_BASE + (vni % 16) * 512 + pid


def rel_hdr(ptype, flags=0, epoch=0, seq=0, ack_epoch=0, ack=0, window=0, sack=0,
            version=1, magic=REL_MAGIC):
    # magic version type flags rsvd epoch seq ack_epoch ack window rsvd sack
    return struct.pack("<HBBHHIIIIIIQ", magic, version, ptype, flags, 0, epoch, seq,
                       ack_epoch, ack, window, 0, sack)


def cxi_pkt(ptype, flags=0, vni=0, pid=0, nic=0, payload=b"", payload_len=None,
            msg_len=0, eager_len=0, tag=0, cq_data=0, cookie=0, offset=0, rdzv_addr=0):
    if payload_len is None:
        payload_len = len(payload)
    hdr = struct.pack("<BBHHHIIQQQQQQQ", ptype, 1, flags, vni, pid, nic, payload_len,
                      msg_len, eager_len, tag, cq_data, cookie, offset, rdzv_addr)
    assert len(hdr) == 72
    return hdr + payload


def small(flags, vni, pid, nic, tag, cq_data, payload):
    hdr = struct.pack("<BBHHHIIQ", SMALL, 1, flags, vni, pid, nic, len(payload), tag)
    if flags & CQ_DATA:
        hdr += struct.pack("<Q", cq_data)
    return hdr + payload


def coll_small(vni, pid, nic, key, shape, seq, rank, payload):
    hdr = struct.pack("<BBHHHIIQQII", COLL_SMALL, 1, 0, vni, pid, nic, len(payload), key,
                      shape, seq, rank)
    assert len(hdr) == 40
    return hdr + payload


def ipv4_checksum(hdr):
    s = sum(struct.unpack("!10H", hdr))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def frame(src_ip, dst_ip, sport, dport, payload):
    udp = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload  # no checksum
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0x4000, 64, 17, 0,
                     bytes(src_ip), bytes(dst_ip))
    ip = ip[:10] + struct.pack("!H", ipv4_checksum(ip)) + ip[12:]
    # Locally administered MACs derived from the last IPv4 byte.
    eth = bytes((2, 0, 0, 0, 0, dst_ip[3], 2, 0, 0, 0, 0, src_ip[3])) + struct.pack("!H", 0x0800)
    return eth + ip + udp


def fuzz(payloads, count, seed=1):
    """Mutations of the given UDP payloads that keep the magic, so the dissector runs."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        p = bytearray(rng.choice(payloads))
        for _ in range(rng.randint(0, 8)):
            if p:
                p[rng.randrange(len(p))] = rng.randrange(256)
        action = rng.randrange(4)
        if action == 0:
            p = p[:rng.randint(0, len(p))]
        elif action == 1:
            p += bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
        elif action == 2 and len(p) >= 52:  # absurd cxi payload length
            p[52:56] = struct.pack("<I", rng.choice((0, 0xFFFFFFFF, rng.randrange(1 << 32))))
        p[0:2] = struct.pack("<H", REL_MAGIC)[:len(p)]
        out.append(bytes(p))
    return out


def main():
    args = sys.argv[1:]
    nfuzz = 0
    if len(args) == 3 and args[1] == "--fuzz":
        nfuzz = int(args[2])
        args = args[:1]
    if len(args) != 1:
        sys.stderr.write(__doc__)
        return 2

    a_ip, b_ip = (10, 0, 0, 1), (10, 0, 0, 2)
    vni = 5
    a_nic, a_pid = 0xD0001, 5
    b_nic, b_pid = 0xD0002, 7
    a_port, b_port = port(vni, a_pid), port(vni, b_pid)
    ep_a, ep_b = 0x1111, 0x2222

    def a_to_b(p):
        return frame(a_ip, b_ip, a_port, b_port, p)

    def b_to_a(p):
        return frame(b_ip, a_ip, b_port, a_port, p)

    frames = [
        # 1 DATA + MSG
        a_to_b(rel_hdr(REL_DATA, ACK_VALID, ep_a, 12, ep_b, 7, 263)
               + cxi_pkt(MSG, TAGGED | CQ_DATA | ACK_REQ, vni, a_pid, a_nic, b"softnic!",
                         msg_len=8, eager_len=8, tag=0x5, cq_data=0xDEADBEEF,
                         cookie=0x1000, rdzv_addr=0x7F0000001000)),
        # 2 DATA + DATA (pulled rendezvous bytes)
        a_to_b(rel_hdr(REL_DATA, 0, ep_a, 13)
               + cxi_pkt(DATA, PULLED, vni, a_pid, a_nic, bytes(range(16)),
                         msg_len=8192, eager_len=4096, cookie=0x1001, offset=4096)),
        # 3 ACK
        b_to_a(rel_hdr(REL_ACK, ACK_VALID | 0x6, ep_b, 0, ep_a, 20, 276, 0x3)),  # congested, duplicates
        # 4 PROBE
        a_to_b(rel_hdr(REL_PROBE, 0, ep_a, 0)),
        # 5 DATA + DONE, receiver truncated
        b_to_a(rel_hdr(REL_DATA, ACK_VALID | 0x8, ep_b, 14, ep_a, 21, 277)  # acknowledge at once
               + cxi_pkt(DONE, TRUNC, vni, b_pid, b_nic, cookie=0xC0FFEE, msg_len=4)),
        # 6 DATA + GET_REQ
        b_to_a(rel_hdr(REL_DATA, 0, ep_b, 15)
               + cxi_pkt(GET_REQ, 0, vni, b_pid, b_nic, cookie=0xABC, offset=65536,
                         msg_len=1 << 20)),
        # 7 garbage without the magic
        a_to_b(b"\xde\xad\xbe\xef garbage, not softnic"),
        # 8 truncated reliability header
        a_to_b(rel_hdr(REL_DATA, 0, ep_a, 16)[:17]),
        # 9 truncated cxi header
        a_to_b(rel_hdr(REL_DATA, 0, ep_a, 17)
               + cxi_pkt(MSG, 0, vni, a_pid, a_nic, msg_len=8)[:30]),
        # 10 payload field larger than the datagram
        a_to_b(rel_hdr(REL_DATA, 0, ep_a, 18)
               + cxi_pkt(MSG, 0, vni, a_pid, a_nic, b"abcd", payload_len=100, msg_len=100)),
        # 11 ACK on a port outside the range
        frame(b_ip, a_ip, 9999, 9998, rel_hdr(REL_ACK, ACK_VALID, ep_b, 0, ep_a, 30, 286)),
        # 12 unknown version and type
        b_to_a(rel_hdr(9, 0, ep_b, version=2)),
        # 13 header PID disagrees with the port
        a_to_b(rel_hdr(REL_DATA, 0, ep_a, 19)
               + cxi_pkt(MSG, 0, vni, 9, a_nic, b"x", msg_len=1)),
        # 14 DATA + COLL_SMALL
        a_to_b(rel_hdr(REL_DATA, 0, ep_a, 20)
               + coll_small(vni, a_pid, a_nic, 0x77, 0x100030003, 9, 2, b"\x2a" + bytes(7))),
        # 15 DATA + SMALL
        a_to_b(rel_hdr(REL_DATA, 0, ep_a, 21)
               + small(TAGGED | CQ_DATA, vni, a_pid, a_nic, 0x9, 0x1234, b"smallmsg")),
    ]
    seeds = [fr[42:] for fr in frames]  # strip Ethernet (14) + IPv4 (20) + UDP (8)
    frames += [a_to_b(p) for p in fuzz(seeds, nfuzz)]

    with open(args[0], "wb") as f:
        # magic, v2.4, thiszone, sigfigs, snaplen, linktype Ethernet
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, fr in enumerate(frames):
            f.write(struct.pack("<IIII", 1700000000 + i, 0, len(fr), len(fr)))
            f.write(fr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
