#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the seed corpus of fuzz_dp_rx (tests/fuzz/corpus/dp_rx): FPDU
streams with CRC off (the CRC field is not checked then), aimed at the
target's MR (token 0x101 at 0x7e9000000000, see fuzz_dp_rx.c): Sends into
the posted receives, Writes, Read Requests and Responses, good and bad,
small and large (direct placement), and streams longer than one read.
Run from the project root."""
import struct, os
D = 'tests/fuzz/corpus/dp_rx'
TOK = 0x101
VA = 0x7e9000000000
def fpdu(ulpdu):
    n = len(ulpdu)
    body = struct.pack('>H', n) + ulpdu
    pad = (-len(body)) % 4
    return body + b'\0' * pad + b'\0' * 4   # CRC off: the field is not checked
def send(msn, mo, payload, last=True, op=3, inv=0):
    return fpdu(bytes([0x41 if last else 0x01, 0x40 | op]) + struct.pack('>IIII', inv, 0, msn, mo) + payload)
def write(stag, to, payload, last=True):
    return fpdu(bytes([0xc1 if last else 0x81, 0x40]) + struct.pack('>IQ', stag, to) + payload)
def read_req(msn, sink_stag, sink_to, size, src_stag, src_to):
    return fpdu(bytes([0x41, 0x41]) + struct.pack('>IIII', 0, 1, msn, 0) + struct.pack('>IQIIQ', sink_stag, sink_to, size, src_stag, src_to))
def read_resp(stag, to, payload):
    return fpdu(bytes([0xc1, 0x42]) + struct.pack('>IQ', stag, to) + payload)
def pat(n, seed):
    return bytes((i * 7 + seed) & 0xff for i in range(n))
def big_send(msn, n, chunk):
    out = b''; off = 0
    while off < n:
        c = min(chunk, n - off)
        out += send(msn, off, pat(c, msn), last=off + c == n)
        off += c
    return out
seeds = {
  'send_small': send(1, 0, b'hello iwarp'),
  'send_large_one_fpdu': send(1, 0, pat(40000, 1)),
  'send_large_split': big_send(1, 45000, 16000),
  'send_over_receive': send(1, 0, pat(50001, 2)),
  'sends_mixed': send(1, 0, pat(8, 3)) + send(2, 0, pat(30000, 4)) + send(3, 0, b'x') + big_send(4, 20000, 5000),
  'write_large': write(TOK, VA + 100, pat(60000, 5)),
  'write_out_of_bounds': write(TOK, VA + 256 * 1024 - 100, pat(8000, 6)),
  'write_bad_stag': write(TOK + 1, VA, pat(5000, 7)),
  'write_zero_rtr': write(1, 0, b''),
  'writes_then_send': write(TOK, VA, pat(9000, 8)) + write(TOK, VA + 9000, pat(12, 9)) + send(1, 0, b'done'),
  'read_req': read_req(1, 0x55, 0x1000, 70000, TOK, VA),
  'read_req_bad': read_req(1, 0x55, 0x1000, 70000, TOK, VA + 250000),
  'read_resp_unexpected': read_resp(0x55, 0x1000, pat(5000, 10)),
  'send_truncated': send(1, 0, pat(40000, 11))[:20000],
}
os.makedirs(D, exist_ok=True)
for name, stream in seeds.items():
    for crc in (0,):
        open(os.path.join(D, name), 'wb').write(bytes([crc]) + stream)
print(len(seeds), 'seeds')
more = {
  'writes_stream': b''.join(write(TOK, VA + (i * 25000) % 200000, pat(60000, i)) for i in range(6)),
  'sends_stream': b''.join(send(i + 1, 0, pat(45000, i)) for i in range(8)),
  'mixed_stream': b''.join(write(TOK, VA, pat(50000, i)) + send(i + 1, 0, pat(10 + i, i)) for i in range(6)) + read_req(1, 0x55, 0x1000, 9000, TOK, VA),
}
for name, stream in more.items():
    open(os.path.join(D, name), 'wb').write(bytes([0]) + stream)
print(len(more), 'more')
