#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Walks every iWARP byte stream of a capture FPDU by FPDU.

tshark's MPA dissector finds FPDUs heuristically, segment by segment. When
qemu's slirp cuts 32 KiB FPDUs (libndk on lo) into 1440-byte guest segments
it loses the FPDU boundaries in bulk transfers and leaves segments
undecoded. This reassembles each direction of each TCP connection on port
PORT from the sequence numbers (retransmissions and overlaps counted once),
skips the MPA Request or Reply, and follows the MPA length fields to the
end of the stream (docs/wire.md): every FPDU must carry DDP and RDMAP
version 1 and a defined RDMAP opcode, and the stream must end on an FPDU
boundary. Prints the opcodes per direction.

    mpa-walk.py PCAP PORT       exit 0 when every stream walks cleanly
"""
import collections
import subprocess
import sys

OPCODES = {0: "Write", 1: "Read Request", 2: "Read Response", 3: "Send",
           4: "Send with Invalidate", 5: "Send with SE",
           6: "Send with SE and Invalidate", 7: "Terminate"}
MPA_KEYS = (b"MPA ID Req Frame", b"MPA ID Rep Frame")


def streams(pcap, port):
    """{(stream, from_port): {seq: payload}} from tshark."""
    out = subprocess.run(
        ["tshark", "-r", pcap, "-Y", "tcp.port == %d && tcp.len > 0" % port,
         "-T", "fields", "-e", "tcp.stream", "-e", "tcp.srcport",
         "-e", "tcp.seq_raw", "-e", "tcp.payload"],
        check=True, capture_output=True, text=True).stdout
    segs = collections.defaultdict(dict)
    for line in out.splitlines():
        f = line.split("\t")
        if len(f) < 4 or not f[3]:
            continue
        data = bytes.fromhex(f[3].replace(":", ""))
        segs[(int(f[0]), int(f[1]))].setdefault(int(f[2]), data)
    return segs


def assemble(segs):
    """The contiguous byte stream from the first segment, or an error."""
    buf = bytearray()
    seqs = sorted(segs)
    cur = seqs[0]
    for s in seqs:
        d = segs[s]
        if s > cur:
            return buf, "gap of %d bytes after %d" % (s - cur, len(buf))
        if s + len(d) > cur:
            buf += d[cur - s:]
            cur = s + len(d)
    return buf, None


def walk(buf):
    """(opcode counter, FPDUs, error or None)."""
    ops = collections.Counter()
    i = n = 0
    if buf[:16] in MPA_KEYS:
        if len(buf) < 20:
            return ops, 0, "short MPA frame"
        i = 20 + int.from_bytes(buf[18:20], "big")
    crc = 4  # the CRC field is there whether or not CRC is used
    while i < len(buf):
        if i + 4 > len(buf):
            return ops, n, "%d stray bytes at the end" % (len(buf) - i)
        ulpdu = int.from_bytes(buf[i:i + 2], "big")
        total = 2 + ulpdu
        total += (-total) % 4 + crc
        if i + total > len(buf):
            return ops, n, "FPDU of %d bytes cut at %d" % (total, len(buf) - i)
        ddp, rdmap = buf[i + 2], buf[i + 3]
        if ddp & 3 != 1 or rdmap >> 6 != 1 or rdmap & 0xf not in OPCODES:
            return ops, n, "bad DDP/RDMAP control %02x %02x at %d" % (
                ddp, rdmap, i)
        # Count messages, not segments: the last DDP segment of each.
        if ddp & 0x40:
            ops[OPCODES[rdmap & 0xf]] += 1
        n += 1
        i += total
    return ops, n, None


def main():
    pcap, port = sys.argv[1], int(sys.argv[2])
    errors = fpdus = 0
    conns = set()
    for (stream, src), segs in sorted(streams(pcap, port).items()):
        conns.add(stream)
        side = "target" if src == port else "host"
        buf, err = assemble(segs)
        ops, n, werr = walk(buf) if not err else ({}, 0, None)
        fpdus += n
        err = err or werr
        print("mpa-walk: stream %d from the %s: %d bytes, %d FPDUs, %s%s" % (
            stream, side, len(buf), n,
            ", ".join("%s %d" % kv for kv in sorted(ops.items())) or "-",
            "; ERROR: " + err if err else ""))
        errors += bool(err)
    print("mpa-walk: %d connections, %d FPDUs, %d streams with errors" % (
        len(conns), fpdus, errors))
    return 1 if errors or not conns else 0


if __name__ == "__main__":
    sys.exit(main())
