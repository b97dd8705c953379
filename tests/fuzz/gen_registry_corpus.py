#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the seed corpus of fuzz_registry (tests/fuzz/corpus/registry):
process files and counters files as the registry writes them and as a
hostile local user might (see fuzz_registry.c for the control byte and
src/oid/registry.h for the layout). Run from the project root."""
import os, socket, struct
D = 'tests/fuzz/corpus/registry'
COUNTERS, RAW, LIVE, FIX, LO = 0x01, 0x02, 0x04, 0x08, 0x10
REG_MAGIC, CTR_MAGIC, VERSION = 0x524b444e, 0x434b444e, 1
LISTENER, SHARED, CONNECTION = 1, 2, 3

def v4(port, addr='127.0.0.1', family=socket.AF_INET):
    return (struct.pack('<H', family) + struct.pack('>H', port) +
            socket.inet_aton(addr) + bytes(8) + bytes(12))
def v6(port, addr='::1'):
    return (struct.pack('<H', socket.AF_INET6) + struct.pack('>H', port) +
            struct.pack('<I', 0) + socket.inet_pton(socket.AF_INET6, addr) +
            struct.pack('<I', 0))
NONE = bytes(28)

def header(high_water, capacity=65536, slot_size=128, magic=REG_MAGIC):
    return struct.pack('<6I', magic, VERSION, 0, slot_size, capacity,
                       high_water)
def slot(kind, local, remote=NONE, seq=2, addressing=0):
    w = struct.pack('<6I', seq, kind, 0, 0, 0, 0) + local + remote + \
        struct.pack('<I', addressing)
    return w + bytes(128 - len(w))
def counters_header(netns=0, ifindex=0, magic=CTR_MAGIC):
    return struct.pack('<4IQ', magic, VERSION, ifindex, 0, netns)
def counters(values):
    return b''.join(struct.pack('<Q', v) for v in values) + \
        bytes(4096 - 64 - 8 * len(values))

three = (slot(LISTENER, v4(445)) + slot(CONNECTION, v6(445), v6(50000)) +
         slot(SHARED, v4(4791), addressing=1))
seeds = {
  'proc_live': bytes([LIVE | FIX | LO]) + header(3) + three,
  'proc_live_made_up_if': bytes([LIVE | FIX]) + header(3) + three,
  'proc_dead': bytes([FIX | LO]) + header(3) + three,
  'proc_odd_sequence': bytes([LIVE | FIX | LO]) + header(2) +
      slot(LISTENER, v4(1), seq=3) + slot(LISTENER, v4(2)),
  'proc_bad_family': bytes([LIVE | FIX | LO]) + header(2) +
      slot(LISTENER, v4(1, family=99)) + slot(CONNECTION, v4(2), v4(3, family=7)),
  'proc_peer_on_listener': bytes([LIVE | FIX | LO]) + header(1) +
      slot(LISTENER, v4(1), v4(2)),
  'proc_bad_kind': bytes([LIVE | FIX | LO]) + header(2) +
      slot(9, v4(1)) + slot(LISTENER, v4(2), addressing=5),
  'proc_high_water_past_capacity': bytes([LIVE | FIX | LO]) +
      header(70000, capacity=70000) + three,
  'proc_high_water_past_file': bytes([LIVE | FIX | LO]) + header(60000) + three,
  'proc_wrong_slot_size': bytes([LIVE | FIX | LO]) + header(3, slot_size=64) + three,
  'proc_raw_short': bytes([RAW | LIVE]) + b'NDKR\x01\x00',
  'proc_raw_empty': bytes([RAW | LIVE]),
  'counters': bytes([COUNTERS | FIX | LO]) + counters_header() +
      counters(range(1, 31)),
  'counters_made_up_if': bytes([COUNTERS | FIX]) + counters_header() +
      counters([2**64 - 1] * 30),
  'counters_short': bytes([COUNTERS | FIX | LO]) + counters_header() + bytes(100),
  'counters_wrong_magic': bytes([COUNTERS | LO]) +
      counters_header(magic=0x1234) + counters([5] * 30),
  'counters_raw': bytes([COUNTERS | RAW | LO]) + bytes(4096),
}
os.makedirs(D, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(D, name), 'wb') as f:
        f.write(data)
