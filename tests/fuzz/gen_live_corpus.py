#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the seed corpus of fuzz_live (tests/fuzz/corpus/live): what a
hostile initiator sends to a listening adapter, each input one control
byte (see fuzz_live.c) and then the byte stream: MPA Requests (v2 with
each RTR, v1, markers, oversized and truncated ones, garbage), and after
the handshake FPDUs with CRC off (the CRC field is not checked then),
aimed at the target's MR (token 0x101 at 0x7e9000000000) and at its
posted receives: Sends, Writes, Read Requests (one for 4 GiB, more than
IRD), Read Responses for the server's own Read, zero-length FPDUs,
Terminates, MSN and MO far ahead. The found_* files beside them are
inputs a libFuzzer run added (-merge=1), not written here. Run from the
project root."""
import os
import struct

D = 'tests/fuzz/corpus/live'
TOK = 0x101                 # the MR, remote read and write
VA = 0x7e9000000000
MR_LEN = 65536
SINK_TOK = 0x201            # the server's Read lands here (control 0x08)
SINK_VA = 0x7e9000107f40
SINK_LEN = 8192

EAGER, RESET, REJECT, POST, DISCONNECT = 0x01, 0x02, 0x04, 0x08, 0x40
LIM1, LIM0, LIM128 = 0x10, 0x20, 0x30


def crc32c(data):
    crc = 0xffffffff
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82f63b78 if crc & 1 else 0)
    return crc ^ 0xffffffff


def request(rev=2, enhanced=True, p2p=True, rtr=('write',), ird=4, ord=4,
            crc=False, markers=False, pd=b'fuzz live', pd_len=None,
            key=b'MPA ID Req Frame'):
    flags = (0x80 if markers else 0) | (0x40 if crc else 0) | \
            (0x10 if enhanced else 0)
    body = b''
    if enhanced:
        a = (0x80 if p2p else 0) | (0x40 if 'send' in rtr else 0)
        c = (0x80 if 'write' in rtr else 0) | (0x40 if 'read' in rtr else 0)
        body = bytes([a | ird >> 8, ird & 0xff, c | ord >> 8, ord & 0xff])
    body += pd
    n = len(body) if pd_len is None else pd_len
    return key + bytes([flags, rev]) + struct.pack('>H', n) + body


def fpdu(ulpdu, crc=False):
    body = struct.pack('>H', len(ulpdu)) + ulpdu
    body += b'\0' * ((-len(body)) % 4)
    return body + (struct.pack('<I', crc32c(body)) if crc else b'\0' * 4)


def untagged(op, qn, msn, mo, payload=b'', last=True, inv=0, crc=False):
    return fpdu(bytes([0x41 if last else 0x01, 0x40 | op]) +
                struct.pack('>IIII', inv, qn, msn, mo) + payload, crc)


def tagged(op, stag, to, payload=b'', last=True, crc=False):
    return fpdu(bytes([0xc1 if last else 0x81, 0x40 | op]) +
                struct.pack('>IQ', stag, to) + payload, crc)


def send(msn, payload, mo=0, last=True, op=3, crc=False):
    return untagged(op, 0, msn, mo, payload, last, crc=crc)


def write(stag, to, payload, last=True, crc=False):
    return tagged(0, stag, to, payload, last, crc)


def read_req(msn, size, src_stag=TOK, src_to=VA, sink_stag=0x77,
             sink_to=0x1000):
    return untagged(1, 1, msn, 0, struct.pack('>IQIIQ', sink_stag, sink_to,
                                               size, src_stag, src_to))


def read_resp(stag, to, payload, last=True):
    return tagged(2, stag, to, payload, last)


def terminate(layer=0, etype=2, code=6, flags=0, quote=b''):
    # Layer, EType (4 bits each), Error Code, then the M, D, R flags
    ctrl = layer << 28 | etype << 24 | code << 16 | flags
    return untagged(7, 2, 1, 0, struct.pack('>I', ctrl) + quote)


# The server's own Read Request (control 0x08), as a Terminate quotes it:
# DDP segment length, the untagged DDP header, the Read Request body.
SERVER_READ_QUOTE = struct.pack('>H', 46) + bytes([0x41, 0x41]) + \
    struct.pack('>IIII', 0, 1, 1, 0) + \
    struct.pack('>IQIIQ', SINK_TOK, SINK_VA, SINK_LEN, 0x5678, 0x20000)


def pat(n, seed):
    return bytes((i * 13 + seed) & 0xff for i in range(n))


def segments(msn, data, chunk):
    out, off = b'', 0
    while off < len(data):
        c = data[off:off + chunk]
        out += send(msn, c, mo=off, last=off + len(c) == len(data))
        off += len(c)
    return out


RTR_WRITE = write(1, 0, b'')
RTR_READ = read_req(1, 0, src_stag=1, src_to=0, sink_stag=0, sink_to=0)
RTR_SEND = send(1, b'')
V2 = request()
HELLO = V2 + RTR_WRITE

seeds = {
    # the handshake alone, each RTR, and what is wrong with it
    'v2_write_rtr': (0, HELLO),
    'v2_read_rtr': (0, request(rtr=('read',)) + RTR_READ + send(1, b'hi')),
    'v2_send_rtr': (0, request(rtr=('send',)) + RTR_SEND + send(1, b'hi')),
    'v2_all_rtrs': (0, request(rtr=('send', 'write', 'read')) + RTR_WRITE),
    'v2_no_rtr_offered': (0, request(rtr=()) + RTR_WRITE + send(1, b'x')),
    'v2_wrong_rtr': (0, V2 + RTR_READ),
    'v2_no_p2p': (0, request(p2p=False) + send(1, b'first')),
    'v2_crc': (0, request(crc=True) + write(1, 0, b'', crc=True) +
               send(1, pat(5000, 1), crc=True) + send(2, b'bad crc')),
    'v2_block_short': (0, request(pd=b'', pd_len=2)[:-2]),
    'v2_pd_252': (0, request(pd=pat(252, 2)) + RTR_WRITE + send(1, b'x')),
    'v2_pd_253': (0, request(pd=pat(253, 3)) + RTR_WRITE),
    'v1': (0, request(rev=1, enhanced=False) + send(1, pat(3000, 4))),
    'v1_markers': (0, request(rev=1, enhanced=False, markers=True)),
    'pd_len_65535': (0, request(pd=pat(1000, 5), pd_len=65535)),
    'bad_key': (0, request(key=b'MPA ID Rep Frame') + RTR_WRITE),
    'truncated': (0, V2[:15]),
    'garbage': (0, pat(300, 6)),
    'eager': (EAGER, HELLO + send(1, b'too early')),
    'reject': (REJECT, V2 + RTR_WRITE),
    # the data path
    'send_small': (0, HELLO + send(1, b'hello iwarp')),
    'send_two_sges': (0, HELLO + send(1, pat(7500, 7))),
    'send_too_long': (0, HELLO + send(1, pat(8001, 8))),
    'send_segments': (0, HELLO + segments(1, pat(6000, 9), 1400)),
    'sends_beyond_receives': (0, HELLO + b''.join(
        send(i + 1, pat(100 * i + 1, i)) for i in range(5))),
    'send_invalidate': (0, HELLO + send(1, b'inv', op=4)),
    'send_msn_ahead': (0, HELLO + send(1000, b'late')),
    'send_mo_ahead': (0, HELLO + send(1, b'far', mo=1 << 30, last=False) +
                      send(1, b'end', mo=(1 << 30) + 3)),
    'zero_length': (0, HELLO + send(1, b'') + struct.pack('>H', 0) +
                    b'\0\0' + b'\0' * 4),
    'write_mr': (0, HELLO + write(TOK, VA + 10, pat(30000, 10)) +
                 write(TOK, VA + 40000, pat(100, 11)) + send(1, b'done')),
    'write_out_of_bounds': (0, HELLO + write(TOK, VA + MR_LEN - 10,
                                             pat(5000, 12))),
    'write_bad_stag': (0, HELLO + write(TOK + 1, VA, pat(50, 13))),
    'read_req': (0, HELLO + read_req(1, 20000) + send(1, b'after')),
    'read_req_4g': (0, HELLO + read_req(1, 0xffffffff)),
    'read_req_beyond_ird': (0, HELLO + b''.join(
        read_req(i + 1, MR_LEN) for i in range(8))),
    'read_req_ird0': (LIM0, HELLO + read_req(1, 100)),
    'read_reqs_128': (LIM128, HELLO + b''.join(
        read_req(i + 1, 512, src_to=VA + 512 * i) for i in range(100))),
    'read_resp_unexpected': (0, HELLO + read_resp(SINK_TOK, SINK_VA,
                                                  pat(100, 14))),
    'terminate': (0, HELLO + send(1, b'x') + terminate()),
    'reset': (RESET, HELLO + write(TOK, VA, pat(20000, 15))),
    # the server's own Read, Send and Write (control 0x08)
    'post_read_resp': (POST, HELLO + read_resp(SINK_TOK, SINK_VA,
                                               pat(SINK_LEN, 16)) +
                       send(1, b'thanks')),
    'post_read_resp_split': (POST, HELLO + read_resp(
        SINK_TOK, SINK_VA, pat(3000, 17), last=False) + read_resp(
        SINK_TOK, SINK_VA + 3000, pat(SINK_LEN - 3000, 18))),
    'post_read_resp_long': (POST, HELLO + read_resp(SINK_TOK, SINK_VA,
                                                    pat(SINK_LEN + 1, 19))),
    'post_terminate': (POST | LIM1, HELLO + terminate(
        0, 1, 2, 0xe000, SERVER_READ_QUOTE)),
    'server_disconnects': (DISCONNECT, HELLO + send(1, pat(2000, 20)) +
                           write(TOK, VA, pat(9000, 21))),
    'post_disconnect_reset': (POST | DISCONNECT | RESET, HELLO +
                              send(1, b'x')),
}

os.makedirs(D, exist_ok=True)
for name, (ctrl, stream) in seeds.items():
    data = bytes([ctrl]) + stream
    assert len(data) < 65536, name
    with open(os.path.join(D, name), 'wb') as f:
        f.write(data)
print(len(seeds), 'seeds')
